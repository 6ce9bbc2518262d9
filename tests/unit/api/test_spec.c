/* Unit tests for the control API spec and its request validator (src/api/spec.c,
 * request.c, yamlw.c): the embedded spec loads; hand-written requests are accepted with the right
 * typed values or refused naming the right field; broken specs are refused; the YAML writer
 * quotes what would read back as another type and never emits invalid UTF-8. */
#include "api/request.h"
#include "api/yamlw.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K1 "KzETaL5ZMbcJUBnaaIpf/8sCfCptDvrtsrECFQCknlk="

struct bad_case {
	const char *req;
	const char *field;     /* exact */
	const char *why;       /* substring of the message */
};

static const struct bad_case bad_cases[] = {
	{ "", "(document)", "empty document" },
	{ "op: [show\n", "(document)", "invalid YAML" },
	{ "op: show\n---\nop: show\n", "(document)", "more than one YAML document" },
	{ "- op\n- show\n", "(document)", "a request is a mapping" },
	{ "args: {}\n", "op", "missing (required)" },
	{ "op: frobnicate\n", "op", "unknown operation 'frobnicate' (one of: show, set," },
	{ "op: [show]\n", "op", "wrong type" },
	{ "op: show\ncolour: red\n", "colour", "unknown field" },
	{ "op: show\nop: show\n", "op", "given twice" },
	{ "op: show\nargs: [1]\n", "args", "expected a mapping, got a sequence" },
	{ "op: show\nargs: {section: everything}\n", "args.section", "is not one of: device, peers" },
	{ "op: show\nargs: {sections: peers}\n", "args.sections", "unknown field (expected one of: section, limit, after, filter)" },
	{ "op: reload\nargs: {x: 1}\n", "args.x", "this operation takes no arguments" },
	{ "op: set\nargs: {aqm: {target_us: 1000}}\n", "args.port", "missing (required)" },
	{ "op: set\n", "args.port", "missing (required)" },
	{ "op: set\nargs: {port: wan, aqm: {target_usx: 1}}\n", "args.aqm.target_usx", "unknown field (expected one of: target_us," },
	{ "op: set\nargs: {port: wan, aqm: {target_us: fast}}\n", "args.aqm.target_us", "'fast' is not an integer" },
	{ "op: set\nargs: {port: wan, aqm: {target_us: \"100\"}}\n", "args.aqm.target_us", "is not an integer" },
	{ "op: set\nargs: {port: wan, aqm: {target_us: 1.5}}\n", "args.aqm.target_us", "is not an integer" },
	{ "op: set\nargs: {port: wan, aqm: {target_us: 0x10}}\n", "args.aqm.target_us", "is not an integer" },
	{ "op: set\nargs: {port: wan, aqm: {target_us: 0}}\n", "args.aqm.target_us", "0 is out of range 1..100000000" },
	{ "op: set\nargs: {port: wan, aqm: {target_us: -5}}\n", "args.aqm.target_us", "-5 is out of range" },
	{ "op: set\nargs: {port: wan, aqm: {target_us: 99999999999999999999999}}\n", "args.aqm.target_us", "out of range" },
	{ "op: set\nargs: {port: wan, aqm: {flows: 65537}}\n", "args.aqm.flows", "out of range 1..65536" },
	{ "op: set\nargs: {port: wan, aqm: {ecn: yes}}\n", "args.aqm.ecn", "not a boolean" },
	{ "op: set\nargs: {port: wan, aqm: {ecn: \"true\"}}\n", "args.aqm.ecn", "not a boolean" },
	{ "op: set\nargs: {port: wan, aqm: 5}\n", "args.aqm", "expected a mapping, got a scalar" },
	{ "op: set\nargs: {port: wan, aqm: {limit: 1, limit: 2}}\n", "args.aqm.limit", "given twice" },
	{ "op: set\nargs: {port: dmz}\n", "args.port", "is not one of: wan, lan" },
	{ "op: set\nargs: {port: wan, shaper: {rate_bps: 400000000001}}\n", "args.shaper.rate_bps", "out of range" },
	{ "op: peer_add\nargs: {}\n", "args.public_key", "missing (required)" },
	{ "op: peer_add\nargs: {public_key: abc}\n", "args.public_key", "not a 32-byte key" },
	{ "op: peer_add\nargs: {public_key: [a]}\n", "args.public_key", "expected a key, got a sequence" },
	{ "op: peer_add\nargs: {public_key: " K1 ", allowed_ips: 10.0.0.1/32}\n", "args.allowed_ips", "expected a sequence" },
	{ "op: peer_add\nargs: {public_key: " K1 ", allowed_ips: [10.0.0.1/32, 10.0.0.300/32]}\n", "args.allowed_ips[1]", "is not an IPv4/IPv6 prefix" },
	{ "op: peer_add\nargs: {public_key: " K1 ", allowed_ips: [10.0.0.1/33]}\n", "args.allowed_ips[0]", "prefix length" },
	{ "op: peer_add\nargs: {public_key: " K1 ", allowed_ips: [10.0.0.1/24, 10.0.0.9/24]}\n", "args.allowed_ips[1]", "same prefix as [0]" },
	{ "op: peer_add\nargs: {public_key: " K1 ", allowed_ips: [{a: 1}]}\n", "args.allowed_ips[0]", "expected a prefix" },
	{ "op: peer_add\nargs: {public_key: " K1 ", endpoint: vpn.example.com:51820}\n", "args.endpoint", "hostname" },
	{ "op: peer_add\nargs: {public_key: " K1 ", endpoint: \"1.2.3.4\"}\n", "args.endpoint", "'1.2.3.4'" },
	{ "op: peer_add\nargs: {public_key: " K1 ", persistent_keepalive: 65536}\n", "args.persistent_keepalive", "out of range 0..65535" },
	{ "op: peer_add\nargs: {public_key: " K1 ", name: 0123456789012345678901234567890123}\n", "args.name", "longer than 31" },
	{ "op: peer_add\nargs: {public_key: " K1 ", name: \"a\\tb\"}\n", "args.name", "control character" },
	{ "op: peer_add\nargs: {public_key: " K1 ", name: \"a\\0b\"}\n", "args.name", "NUL" },
	{ "op: peer_add\nargs: {public_key: " K1 ", name: ~}\n", "args.name", "got null" },
	{ "op: peer_remove\nargs: {public_key: " K1 ", name: x}\n", "args.name", "unknown field" },
	{ "? [a]\n: b\n", "(document)", "wrong type" },
};

static void test_bad(const struct tl_api_spec *spec)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct tl_api_request req;
		struct tl_api_error e;
		int rc = tl_api_request_parse(spec, c->req, strlen(c->req), &req, &e);

		CHECK(rc < 0, "accepted: %s", c->req);
		CHECK(rc < 0 && !strcmp(e.field, c->field), "%s: field '%s', want '%s' (%s)", c->req, e.field, c->field,
		      e.message);
		CHECK(rc < 0 && strstr(e.message, c->why), "%s: message '%s', want '%s'", c->req, e.message, c->why);
		CHECK(req.op == NULL && req.args.sub == NULL, "request not emptied on error");
	}
}

static int parse_ok(const struct tl_api_spec *spec, const char *text, struct tl_api_request *req)
{
	struct tl_api_error e;
	int rc = tl_api_request_parse(spec, text, strlen(text), req, &e);

	CHECK(rc == 0, "refused: %s -> %s: %s", text, e.field, e.message);
	return rc;
}

static void test_good(const struct tl_api_spec *spec)
{
	struct tl_api_request req;
	const struct tl_api_value *v, *aqm;
	char text[64];

	if (parse_ok(spec, "op: show\n...\n", &req) == 0) {
		CHECK(!strcmp(req.op->name, "show"), "op %s", req.op->name);
		CHECK(!tl_api_value_has(&req.args, "section"), "section present");
		CHECK(tl_api_value_get(&req.args, "section") != NULL, "section not in spec");
		tl_api_request_free(&req);
	}
	if (parse_ok(spec, "op: show\nargs:\n", &req) == 0)
		tl_api_request_free(&req);
	if (parse_ok(spec, "op: reload\nargs: {}\n", &req) == 0)
		tl_api_request_free(&req);
	if (parse_ok(spec, "---\nop: set\nargs:\n  port: lan\n  aqm: {target_us: 2000, memory_limit: 4294967296, ecn: false}\n"
			   "  shaper: {rate_bps: 100000000}\n...\n", &req) == 0) {
		aqm = tl_api_value_has(&req.args, "aqm");
		CHECK(!strcmp(tl_api_value_has(&req.args, "port")->s, "lan"), "port");
		CHECK(aqm && tl_api_value_has(aqm, "target_us")->i == 2000, "target_us");
		CHECK(aqm && tl_api_value_has(aqm, "memory_limit")->i == 4294967296ll, "memory_limit");
		CHECK(aqm && !tl_api_value_has(aqm, "ecn")->b && tl_api_value_has(aqm, "ecn")->present, "ecn");
		CHECK(aqm && !tl_api_value_has(aqm, "flows"), "flows absent");
		CHECK(tl_api_value_has(tl_api_value_has(&req.args, "shaper"), "rate_bps")->i == 100000000, "rate");
		tl_api_request_free(&req);
	}
	if (parse_ok(spec, "op: peer_add\nargs:\n  public_key: '" K1 "'\n  allowed_ips: [10.2.0.9/24, fd00::1, 0.0.0.0/0]\n"
			   "  endpoint: '[fd99::2]:51820'\n  name: \"123\"\n  persistent_keepalive: 25\n", &req) == 0) {
		v = tl_api_value_has(&req.args, "allowed_ips");
		CHECK(v && v->n_prefixes == 3, "3 prefixes");
		if (v && v->n_prefixes == 3) {
			tl_prefix_format(text, sizeof(text), &v->prefixes[0]);
			CHECK(!strcmp(text, "10.2.0.0/24"), "host bits cleared: %s", text);
			CHECK(v->prefixes[1].len == 128, "bare v6 is /128");
		}
		CHECK(tl_api_value_has(&req.args, "endpoint")->ep.port == 51820, "endpoint port");
		CHECK(!strcmp(tl_api_value_has(&req.args, "name")->s, "123"), "quoted digits are a string");
		CHECK(tl_api_value_has(&req.args, "public_key")->key[0] == 0x2b, "key decoded");
		tl_api_request_free(&req);
	}
	if (parse_ok(spec, "op: peer_add\nargs: {public_key: " K1 ", allowed_ips: []}\n", &req) == 0) {
		CHECK(tl_api_value_has(&req.args, "allowed_ips")->n_prefixes == 0, "empty list");
		tl_api_request_free(&req);
	}
}

/* The head every broken spec below shares. */
#define H "title: t\nversion: 1\nframing: f\nrequest: r\nreply: r\n"

static void test_spec(const struct tl_api_spec *spec)
{
	static const char *const want[] = { "show", "set", "peer_add", "peer_update", "peer_remove", "reload" };
	static const struct {
		const char *text, *why;
	} broken[] = {
		{ "title: t\n", "Missing required mapping field" },
		{ "- a\n", "Expecting" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: nope, help: h}], reply: []}]\n", "nope" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: enum, help: h}], reply: []}]\n", "an enum needs values" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: list, help: h}], reply: []}]\n", "replies only" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: integer}], reply: []}]\n", "help" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: integer, help: h, min: 5, max: 1}], reply: []}]\n", "min above max" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: integer, help: h, colour: red}], reply: []}]\n", "colour" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: map, help: h}], reply: []}]\n", "needs fields" },
		{ H "operations: [{name: x, help: h, args: [{name: a, type: string, help: h}, {name: a, type: string, help: h}], reply: []}]\n", "defined twice" },
		{ H "operations: [{name: x, help: h, args: [], reply: []}, {name: x, help: h, args: [], reply: []}]\n", "defined twice" },
		{ "title: t\nversion: 0\nframing: f\nrequest: r\nreply: r\noperations: [{name: x, help: h, args: [], reply: []}]\n", "positive" },
	};
	char err[512];

	CHECK(spec->n_ops == sizeof(want) / sizeof(want[0]), "%zu operations", spec->n_ops);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(tl_api_spec_op(spec, want[i]) && tl_api_spec_op(spec, want[i])->help, "operation %s", want[i]);
	CHECK(spec->version >= 1 && spec->framing && strstr(spec->framing, "65536"), "framing documented");
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		struct tl_api_spec *s = tl_api_spec_load(broken[i].text, strlen(broken[i].text), err, sizeof(err));

		CHECK(!s && strstr(err, broken[i].why), "broken spec %zu: '%s', want '%s'", i, err, broken[i].why);
		tl_api_spec_free(s);
	}
}

static void test_writer(const struct tl_api_spec *spec)
{
	static const struct {
		const char *s;
		enum tl_ykind k;
	} kinds[] = {
		{ "", TL_YK_NULL }, { "~", TL_YK_NULL }, { "null", TL_YK_NULL }, { "true", TL_YK_BOOL }, { "False", TL_YK_BOOL },
		{ "0", TL_YK_INT }, { "-12", TL_YK_INT }, { "007", TL_YK_STRING }, { "1.5", TL_YK_NUMBER },
		{ "1e9", TL_YK_NUMBER }, { "yes", TL_YK_NUMBER }, { "10.0.0.1", TL_YK_STRING }, { "wan", TL_YK_STRING },
		{ "1.", TL_YK_STRING }, { "-", TL_YK_STRING },
	};
	struct tl_buf b = { 0 };
	struct tl_api_request req;
	struct tl_yaml_writer w;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		CHECK(tl_yaml_plain_kind(kinds[i].s) == kinds[i].k, "kind of '%s'", kinds[i].s);
	/* a name that looks like a number or a boolean reads back as a string */
	tl_yaml_begin(&w, &b);
	tl_yaml_map(&w);
	tl_yaml_key_str(&w, "op", "peer_update");
	tl_yaml_key(&w, "args");
	tl_yaml_map(&w);
	tl_yaml_key_str(&w, "public_key", K1);
	tl_yaml_key_str(&w, "name", "true");
	tl_yaml_key_u64(&w, "persistent_keepalive", 25);
	tl_yaml_end_map(&w);
	tl_yaml_end_map(&w);
	CHECK(tl_yaml_finish(&w) == 0, "writer");
	CHECK(b.len > 8 && !strncmp(b.p, "---", 3) && !strcmp(b.p + b.len - 4, "...\n"), "document markers: %s", b.p);
	if (parse_ok(spec, b.p, &req) == 0) {
		CHECK(!strcmp(tl_api_value_has(&req.args, "name")->s, "true"), "name read back");
		CHECK(tl_api_value_has(&req.args, "persistent_keepalive")->i == 25, "integer read back");
		tl_api_request_free(&req);
	}
	tl_buf_free(&b);
	/* an error message cut in the middle of a UTF-8 character is still written */
	tl_api_error_reply(&b, "set", "args.name", "bad: \xc3");
	CHECK(b.p && strstr(b.p, "status: error") && strstr(b.p, "field: args.name") && strstr(b.p, "bad: ?"),
	      "error reply: %s", b.p ? b.p : "(none)");
	tl_buf_free(&b);
}

int main(void)
{
	char err[512];
	const struct tl_api_spec *spec = tl_api_spec_builtin(err, sizeof(err));

	CHECK(spec != NULL, "embedded spec: %s", err);
	if (!spec)
		return check_report();
	test_spec(spec);
	test_good(spec);
	test_bad(spec);
	test_writer(spec);
	return check_report();
}
