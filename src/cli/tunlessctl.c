/* tunlessctl: the command-line client of the YAML control API (src/api/ctlapi.yaml).
 * Arguments are checked against the embedded spec before anything is sent (the same
 * validator the daemon runs); replies are printed as tables, as YAML or as JSON. The
 * commands: ctl_request.c builds and sends a request, ctl_output.c prints the reply,
 * ctl_watch.c refreshes show, ctl_help.c the help and the generated docs, import.c imports a
 * wg-quick configuration. */
#include <getopt.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "cli/ctl.h"
#include "cli/import.h"

static const struct tl_api_spec *g_spec;

int ctl_fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("tunlessctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

/* ---- main ------------------------------------------------------------------------------------------ */

static int help_main(int argc, char **argv)
{
	const struct tl_api_op *op;
	char name[64];

	if (argc == 0) {
		ctl_usage(stdout, g_spec);
		return CTL_OK;
	}
	if (!strcmp(argv[0], "--markdown"))
		return ctl_help_markdown(stdout, g_spec) == 0 ? CTL_OK : CTL_USAGE;
	if (!strcmp(argv[0], "--read-model"))
		return ctl_help_read_model(stdout) == 0 ? CTL_OK : CTL_USAGE;
	snprintf(name, sizeof(name), "%s", argv[0]);
	for (char *p = name; *p; p++)
		if (*p == '-')
			*p = '_';
	if (!strcmp(name, "watch")) {
		printf("tunlessctl watch [-i SECONDS] [--count N]\n\nRefreshes, in place, per-queue depth, sojourn "
		       "p50/p99, throughput (from deltas), per-worker busy %%, crypto rate, jobs in flight and "
		       "backpressure, the crypto ring's depth, and drops by reason (deltas and totals).\n");
		return CTL_OK;
	}
	op = tl_api_spec_op(g_spec, name);
	if (!op)
		return ctl_fail(CTL_USAGE, "help: unknown operation '%s'", argv[0]);
	return ctl_help_op(stdout, op);
}

static int op_main(const char *path, const char *name, int argc, char **argv, enum ctl_out_mode mode)
{
	struct tl_buf req = { 0 }, reply = { 0 };
	const struct tl_api_op *op;
	char opname[64];
	int rc;

	snprintf(opname, sizeof(opname), "%s", name);
	for (char *p = opname; *p; p++)
		if (*p == '-')
			*p = '_';
	op = tl_api_spec_op(g_spec, opname);
	if (!op)
		return ctl_fail(CTL_USAGE, "unknown operation '%s' (tunlessctl help lists them)", name);
	rc = ctl_request_build(g_spec, op, argc, argv, &req);
	if (rc == 0)
		rc = ctl_call(path, &req, &reply);
	if (rc == 0)
		rc = ctl_reply_print(op->name, &reply, mode);
	tl_buf_free(&req);
	tl_buf_free(&reply);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "socket", required_argument, NULL, 's' },
		{ "yaml", no_argument, NULL, 'Y' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	enum ctl_out_mode mode = CTL_OUT_HUMAN;
	const char *name = NULL, *sock = NULL;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64], err[512];
	int c;

	g_spec = tl_api_spec_builtin(err, sizeof(err));
	if (!g_spec)
		return ctl_fail(CTL_USAGE, "%s", err);
	while ((c = getopt_long(argc, argv, "+n:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': name = optarg; break;
		case 's': sock = optarg; break;
		case 'Y': mode = CTL_OUT_YAML; break;
		case 'J': mode = CTL_OUT_JSON; break;
		case 'h': ctl_usage(stdout, g_spec); return CTL_OK;
		default: ctl_usage(stderr, g_spec); return CTL_USAGE;
		}
	}
	if (optind == argc) {
		ctl_usage(stderr, g_spec);
		return CTL_USAGE;
	}
	if (!strcmp(argv[optind], "import"))
		return ctl_import_main(argc - optind, argv + optind);
	if (!strcmp(argv[optind], "help"))
		return help_main(argc - optind - 1, argv + optind + 1);
	if (!name && !sock)
		return ctl_fail(CTL_USAGE, "give the instance name (-n NAME) or the socket (-s PATH)");
	if (name && (!name[0] || strchr(name, '/') || strlen(name) >= IF_NAMESIZE))
		return ctl_fail(CTL_USAGE, "-n: '%s' is not an instance name", name);
	snprintf(path, sizeof(path), "%s", sock ? sock : "");
	if (!sock)
		snprintf(path, sizeof(path), "%s/%s.sock", TL_CTL_DIR, name);
	if (!strcmp(argv[optind], "watch"))
		return ctl_watch_main(g_spec, path, argc - optind - 1, argv + optind + 1, mode);
	return op_main(path, argv[optind], argc - optind - 1, argv + optind + 1, mode);
}
