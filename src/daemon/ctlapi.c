/* The YAML control API: its operations (show in ctlapi_show.c; set, peer_add, peer_update,
 * peer_remove, reload) and its protocol over the request server (api/server.h). A request
 * is one YAML document ended by a line "..." or by the client shutting down its writing
 * side; the reply is one document from "---" to "...". Each request has been validated
 * against the spec (types, ranges, unknown and missing fields) before an operation sees it;
 * every operation then checks what needs the device, and only then applies anything: a
 * request that fails changes nothing. Runs on the control thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "config/config_diff.h"
#include "ctrl/aips.h"
#include "ctrl/devchange.h"
#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/ports.h"
#include "daemon/ctlapi.h"
#include "daemon/metrics.h"

static int role_of(const char *name)
{
	return !strcmp(name, "lan") ? TL_PORT_LAN : TL_PORT_WAN;
}

static void peer_label(char *out, size_t len, const struct tl_peer_ctrl *pc)
{
	char key[45];

	tl_key_to_base64(key, pc->cfg.public_key);
	if (pc->cfg.name[0])
		snprintf(out, len, "'%s' (%s)", pc->cfg.name, key);
	else
		snprintf(out, len, "%s", key);
}

/* ---- queue parameters (set, reload) ------------------------------------------------------- */

/* A device change refused: the error names the field of the part that refused it. prefix:
 * where the request holds the queue parameters ("args"; NULL: a reload's "ports.<port>"). */
static int change_fail(const struct tl_dev_refusal *r, int err, const char *prefix, uint16_t port,
		       struct tl_api_error *e)
{
	char field[48];

	switch (r->part) {
	case TL_DEV_PART_PORT:
		return tl_api_fail(e, "listen_port", "cannot move to %u: %s; nothing applied", (unsigned)port,
				   strerror(err));
	case TL_DEV_PART_QUEUE:
		if (!prefix)
			snprintf(field, sizeof(field), "ports.%s.%s", tl_port_names[r->role], r->shaper ? "shaper" : "aqm");
		else
			snprintf(field, sizeof(field), "%s.%s", prefix, r->shaper ? "shaper" : "aqm");
		return tl_api_fail_qparams(e, field, r->why);
	default:
		return tl_api_fail(e, "(request)", "%s; nothing changed", strerror(err));
	}
}

static int op_set(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e)
{
	const struct tl_api_value *va = tl_api_value_has(&req->args, "aqm"), *vs = tl_api_value_has(&req->args, "shaper");
	int role = role_of(tl_api_value_has(&req->args, "port")->s);
	struct tl_dev_change c = { 0 };
	struct tl_dev_refusal r;
	struct tl_aqm_params aqm;
	struct tl_shaper_params sh;
	int err;

	if (!dev->ports[role].started || !dev->dp.n_workers)
		return tl_api_fail(e, "args.port", "this device has no %s port", tl_port_names[role]);
	if (!va && !vs)
		return tl_api_fail(e, "args", "nothing to set: give aqm and/or shaper");
	tl_dev_queue_current(dev, role, &aqm, &sh);
	if (va)
		tl_api_merge_aqm(va, &aqm);
	if (vs)
		tl_api_merge_shaper(vs, &sh);
	c.has_aqm[role] = va != NULL;
	c.has_shaper[role] = vs != NULL;
	c.aqm[role] = aqm;
	c.shaper[role] = sh;
	if ((err = tl_dev_change(dev, &c, &r)) != 0)
		return change_fail(&r, err, "args", 0, e);
	tl_log_info("ctlapi: set %s: target %u us, interval %u us, flows %u, limit %u, shaper %" PRIu64 " bit/s",
		    tl_port_names[role], aqm.target_us, aqm.interval_us, aqm.flows, aqm.limit, sh.rate_bps);
	tl_yaml_map(w);
	tl_yaml_key_str(w, "port", tl_port_names[role]);
	tl_yaml_key(w, "aqm");
	tl_yaml_aqm(w, &aqm);
	tl_yaml_key(w, "shaper");
	tl_yaml_shaper(w, &sh);
	tl_yaml_end_map(w);
	return 0;
}

/* ---- peers ------------------------------------------------------------------------------------ */

static int peer_aips_check(struct tl_device *dev, const struct tl_api_value *aips, const struct tl_peer_ctrl *self,
			   struct tl_api_error *e)
{
	for (size_t i = 0; aips && i < aips->n_prefixes; i++) {
		struct tl_peer_ctrl *o = tl_aips_owner(dev, &aips->prefixes[i], self);
		char field[64], text[64], who[96];

		if (!o)
			continue;
		snprintf(field, sizeof(field), "args.allowed_ips[%zu]", i);
		tl_prefix_format(text, sizeof(text), &aips->prefixes[i]);
		peer_label(who, sizeof(who), o);
		return tl_api_fail(e, field, "%s is already an allowed IP of peer %s", text, who);
	}
	return 0;
}

static int peers_apply(struct tl_device *dev, const struct tl_peer_op *ops, size_t n, struct tl_api_error *e)
{
	struct tl_dev_change c = { .ops = ops, .n_ops = n };
	struct tl_dev_refusal r;
	int err = tl_dev_change(dev, &c, &r);

	return err ? change_fail(&r, err, "args", 0, e) : 0;
}

static void reply_key(struct tl_yaml_writer *w, const uint8_t key[TL_KEY_LEN])
{
	tl_yaml_map(w);
	tl_yaml_key(w, "public_key");
	tl_yaml_b64(w, key);
	tl_yaml_end_map(w);
}

static int op_peer_add(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e)
{
	struct tl_peer_op op;
	int rc;

	tl_api_peer_op(&req->args, &op);
	if (!memcmp(op.pub, dev->id.pub, TL_KEY_LEN))
		rc = tl_api_fail(e, "args.public_key", "is our own public key");
	else if (tl_peer_find(dev, op.pub))
		rc = tl_api_fail(e, "args.public_key", "a peer with this public key exists (use peer_update)");
	else if (dev->n_peers >= TL_MAX_PEERS)
		rc = tl_api_fail(e, "args.public_key", "no room for another peer (at most %u)", TL_MAX_PEERS);
	else
		rc = peer_aips_check(dev, tl_api_value_has(&req->args, "allowed_ips"), NULL, e);
	if (rc == 0)
		rc = peers_apply(dev, &op, 1, e);
	if (rc == 0) {
		tl_log_info("ctlapi: peer added (%zu allowed IPs)", op.n_aips);
		reply_key(w, op.pub);
	}
	tl_wipe(&op, sizeof(op));
	return rc;
}

static int op_peer_update(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e)
{
	struct tl_peer_ctrl *pc;
	struct tl_peer_op op;
	int rc;

	tl_api_peer_op(&req->args, &op);
	op.update_only = true;
	pc = tl_peer_find(dev, op.pub);
	rc = pc ? peer_aips_check(dev, tl_api_value_has(&req->args, "allowed_ips"), pc, e)
		: tl_api_fail(e, "args.public_key", "no peer with this public key");
	if (rc == 0)
		rc = peers_apply(dev, &op, 1, e);
	if (rc == 0)
		reply_key(w, op.pub);
	tl_wipe(&op, sizeof(op));
	return rc;
}

static int op_peer_remove(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e)
{
	struct tl_peer_op op = { .remove = true };

	memcpy(op.pub, tl_api_value_has(&req->args, "public_key")->key, TL_KEY_LEN);
	if (!tl_peer_find(dev, op.pub))
		return tl_api_fail(e, "args.public_key", "no peer with this public key");
	if (peers_apply(dev, &op, 1, e) < 0)
		return -1;
	tl_log_info("ctlapi: peer removed");
	reply_key(w, op.pub);
	return 0;
}

/* ---- reload ----------------------------------------------------------------------------------- */

static void reload_reply(struct tl_yaml_writer *w, const char *file, const struct tl_config_diff *d,
			 const bool queues[TL_PORT_MAX])
{
	static const char *const lists[] = { "peers_removed", "peers_updated", "peers_added" };
	size_t first[] = { 0, d->n_remove, d->n_remove + d->n_update, d->n_ops };

	tl_yaml_map(w);
	tl_yaml_key_str(w, "file", file);
	for (int l = 0; l < 3; l++) {
		tl_yaml_key(w, lists[l]);
		tl_yaml_seq(w);
		for (size_t i = first[l]; i < first[l + 1]; i++)
			tl_yaml_b64(w, d->ops[i].pub);
		tl_yaml_end_seq(w);
	}
	tl_yaml_key(w, "queues_changed");
	tl_yaml_flow_seq(w);
	for (int r = 0; r < TL_PORT_MAX; r++)
		if (queues[r])
			tl_yaml_str(w, tl_port_names[r]);
	tl_yaml_end_seq(w);
	tl_yaml_end_map(w);
}

static int op_reload(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e)
{
	struct tl_config_diff d = { 0 };
	struct tl_config *nc = NULL;
	struct tl_dev_change c;
	struct tl_dev_refusal r;
	bool queues[TL_PORT_MAX];
	char msg[1024];
	int rc = -1, err;

	(void)req;
	if (tl_config_load(dev->cfg->path, &nc, msg, sizeof(msg)) < 0)
		return tl_api_fail(e, "(config)", "%s", msg);
	if (tl_dev_reload_change(dev, nc, &d, &c) < 0)
		tl_api_fail(e, "(request)", "out of memory");
	else if (d.restart_key)
		tl_api_fail(e, d.restart_key, "changes need a restart (%s); nothing applied", dev->cfg->path);
	else if (nc->n_peers > TL_MAX_PEERS)
		tl_api_fail(e, "peers", "more than %u peers", TL_MAX_PEERS);
	else if ((err = tl_dev_change(dev, &c, &r)) != 0)
		change_fail(&r, err, NULL, nc->listen_port, e);
	else
		rc = 0;
	if (rc == 0) {
		tl_log_info("ctlapi: reloaded %s: %zu peer(s) added, %zu removed, %zu changed", dev->cfg->path,
			    d.n_add, d.n_remove, d.n_update);
		for (int p = 0; p < TL_PORT_MAX; p++)
			queues[p] = c.has_aqm[p] || c.has_shaper[p];
		reload_reply(w, dev->cfg->path, &d, queues);
	}
	tl_config_diff_free(&d);
	tl_config_free(nc);
	return rc;
}

/* ---- dispatch ----------------------------------------------------------------------------------- */

typedef int (*op_fn)(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e);

static op_fn op_find(const char *name)
{
	static const struct {
		const char *name;
		op_fn fn;
	} ops[] = {
		{ "show", tl_ctlapi_op_show }, { "set", op_set }, { "peer_add", op_peer_add },
		{ "peer_update", op_peer_update }, { "peer_remove", op_peer_remove }, { "reload", op_reload },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].name, name))
			return ops[i].fn;
	return NULL;
}

static int op_run(struct tl_device *dev, const struct tl_api_request *req, struct tl_buf *out, struct tl_api_error *e)
{
	op_fn fn = op_find(req->op->name);
	struct tl_yaml_writer w;

	if (!fn)
		return tl_api_fail(e, "op", "'%s' is in the spec but not implemented by this daemon", req->op->name);
	tl_yaml_begin(&w, out);
	tl_yaml_map(&w);
	tl_api_reply_head(&w, "ok", req->op->name);
	tl_yaml_key(&w, "result");
	if (fn(dev, req, &w, e) < 0) {
		tl_yaml_finish(&w);
		return -1;
	}
	tl_yaml_end_map(&w);
	if (tl_yaml_finish(&w) < 0)
		return tl_api_fail(e, "(request)", "out of memory while writing the reply (the operation was applied)");
	return 0;
}

void tl_ctlapi_request(struct tl_device *dev, const char *text, size_t len, struct tl_buf *out)
{
	const struct tl_api_spec *spec = dev->ctlapi ? dev->ctlapi->spec : NULL;
	struct tl_buf reply = { 0 };
	struct tl_api_request req;
	struct tl_api_error e;
	char msg[256];

	if (!spec && !(spec = tl_api_spec_builtin(msg, sizeof(msg)))) {
		tl_api_error_reply(out, NULL, "(request)", msg);
		return;
	}
	if (tl_api_request_parse(spec, text, len, &req, &e) < 0) {
		tl_log_info("ctlapi: request refused: %s: %s", e.field, e.message);
		tl_api_error_reply(out, NULL, e.field, e.message);
		return;
	}
	if (op_run(dev, &req, &reply, &e) < 0) {
		tl_log_info("ctlapi: %s refused: %s: %s", req.op->name, e.field, e.message);
		tl_api_error_reply(out, req.op->name, e.field, e.message);
	} else {
		tl_buf_add(out, reply.p, reply.len);
	}
	tl_buf_free(&reply);
	tl_api_request_free(&req);
}

/* ---- the protocol over the request server --------------------------------------------------------- */

static enum tl_server_next ctl_refusal(struct tl_buf *out, const char *why)
{
	tl_log_info("ctlapi: %s, closing the connection", why);
	tl_api_error_reply(out, NULL, "(request)", why);
	return TL_SERVER_CLOSE;
}

static enum tl_server_next ctl_answer(void *ctx, char *req, size_t len, struct tl_buf *out)
{
	if (memchr(req, '\0', len))
		return ctl_refusal(out, "request contains a NUL byte (a request is YAML text)");
	tl_ctlapi_request(ctx, req, len, out);
	return TL_SERVER_MORE;
}

/* At the end of the input, what is left is the last request. */
static void ctl_at_eof(void *ctx, char *in, size_t len, struct tl_buf *out)
{
	if (!tl_api_blank(in, len))
		ctl_answer(ctx, in, len, out);
}

static void ctl_refuse(void *ctx, bool oom, struct tl_buf *out)
{
	(void)ctx;
	ctl_refusal(out, oom ? "out of memory for the request"
			     : "request larger than 65536 bytes (a request ends with a line '...')");
}

static const struct tl_server_ops ctl_ops = {
	.name = "ctlapi",
	.request_end = tl_api_request_end,
	.answer = ctl_answer,
	.at_eof = ctl_at_eof,
	.refuse = ctl_refuse,
	.max_request = TL_CTL_MAX_REQUEST,
	.first_buffer = 4096,
	.read_chunk = 16384,
	.idle_ns = 10ull * TL_NS,
	.accepts_per_event = 1,
};

int tl_ctlapi_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_ctlapi *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(err, errlen, "ctlapi: %s", strerror(ENOMEM));
		return -1;
	}
	a->spec = tl_api_spec_builtin(err, errlen);
	if (!a->spec ||
	    tl_unix_server_open(&a->us, "ctlapi", TL_CTL_DIR, dev->cfg->name, &ctl_ops, dev, dev->loop, err, errlen) != 0) {
		free(a);
		return -1;
	}
	dev->ctlapi = a;
	dev->servers[TL_SERVER_CTLAPI] = &a->us.srv;
	tl_log_info("ctlapi: listening on %s", a->us.sock.path);
	return 0;
}

void tl_ctlapi_close(struct tl_device *dev)
{
	if (!dev->ctlapi)
		return;
	tl_unix_server_close(&dev->ctlapi->us);
	free(dev->ctlapi);
	dev->ctlapi = NULL;
	dev->servers[TL_SERVER_CTLAPI] = NULL;
}
