/* Control-plane log lines (src/ctrl/log.c): plain "name: level: message" on stderr, and the
 * journal's priority prefix (<3> error, <4> warning, <6> info, <7> debug) on every line, only
 * when JOURNAL_STREAM names stderr's device and inode (systemd.exec(5)). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ctrl/log.h"

static char g_path[] = "/tmp/tunless-test-log.XXXXXX";

/* Runs the logging calls with stderr on a fresh file; returns what they wrote. */
static char *capture(const char *journal_stream, void (*fn)(void))
{
	static char buf[8192];
	int fd = mkstemp(g_path), saved = dup(2);
	ssize_t n;

	if (fd < 0 || saved < 0)
		return NULL;
	fflush(stderr);
	dup2(fd, 2);
	if (journal_stream) {
		char v[64];
		struct stat st;

		if (!strcmp(journal_stream, "self")) {   /* the real device:inode of stderr */
			fstat(2, &st);
			snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
				 (unsigned long long)st.st_ino);
			journal_stream = v;
		}
		setenv("JOURNAL_STREAM", journal_stream, 1);
	} else {
		unsetenv("JOURNAL_STREAM");
	}
	tl_log_reset();
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(g_path);
	memcpy(g_path + strlen(g_path) - 6, "XXXXXX", 6);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static void levels(void)
{
	tl_log_verbose = 1;
	tl_log_err("bad %d", 1);
	tl_log_warn("careful");
	tl_log_info("up: %s", "host mode");
	tl_log_debug("detail");
	tl_log_verbose = 0;
	tl_log_debug("not shown");
}

static void bare(void)
{
	tl_log_bare(TL_LOG_ERR, "x.yaml:3: mtu: 70000 is out of range 576..9000");
}

static void multiline(void)
{
	tl_log_err("reload refused:\nfield: mode\nmessage: needs a restart\n");
}

static char g_long[3000];

static void long_line(void)
{
	tl_log_info("%s", g_long);
}

int main(void)
{
	const char *out;
	char want[3100];

	tl_log_name = "gw0";
	out = capture(NULL, levels);
	CHECK(out && !strcmp(out, "gw0: error: bad 1\ngw0: warning: careful\ngw0: info: up: host mode\n"
				  "gw0: debug: detail\n"),
	      "plain lines without JOURNAL_STREAM: [%s]", out);

	out = capture("self", levels);
	CHECK(out && !strcmp(out, "<3>gw0: error: bad 1\n<4>gw0: warning: careful\n<6>gw0: info: up: host mode\n"
				  "<7>gw0: debug: detail\n"),
	      "priority prefixes when JOURNAL_STREAM is stderr: [%s]", out);

	out = capture(NULL, bare);
	CHECK(out && !strcmp(out, "gw0: x.yaml:3: mtu: 70000 is out of range 576..9000\n"),
	      "tl_log_bare: no level word: [%s]", out);
	out = capture("self", bare);
	CHECK(out && !strcmp(out, "<3>gw0: x.yaml:3: mtu: 70000 is out of range 576..9000\n"),
	      "tl_log_bare: the priority prefix still: [%s]", out);

	out = capture("self", multiline);
	CHECK(out && !strcmp(out, "<3>gw0: error: reload refused:\n<3>gw0: error: field: mode\n"
				  "<3>gw0: error: message: needs a restart\n"),
	      "every line of a multi-line message has the prefix: [%s]", out);

	/* A daemon started from a journal-logged shell, its stderr redirected to a file: the
	 * variable is inherited but names another stream. */
	out = capture("1:1", levels);
	CHECK(out && !strncmp(out, "gw0: error: bad 1\n", 18), "JOURNAL_STREAM of another stream: plain [%s]", out);
	out = capture("garbage", levels);
	CHECK(out && !strncmp(out, "gw0: error: bad 1\n", 18), "malformed JOURNAL_STREAM: plain [%s]", out);

	memset(g_long, 'x', sizeof(g_long) - 1);
	out = capture("self", long_line);
	snprintf(want, sizeof(want), "<6>gw0: info: %s\n", g_long);
	CHECK(out && !strcmp(out, want), "a message longer than the stack buffer is written whole (%zu bytes)",
	      out ? strlen(out) : 0);
	return check_report();
}
