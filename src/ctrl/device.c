/* The device's shared objects: the dataplane's (dataplane/dp.c) and the control plane's
 * own, the index table of handshakes and sessions, its AEAD context for keepalives and
 * staged packets, and the per-source handshake rate limiter. */
#include "ctrl/aips.h"
#include "ctrl/device.h"
#include "ctrl/peer.h"
#include "ctrl/ratelimit.h"
#include "ctrl/session.h"

/* Handshakes and sessions in progress before the control plane's index table first grows. */
#define TL_CTRL_INDEX_MIN 4096

int tl_device_objects_create(struct tl_device *dev)
{
	if (tl_dp_create(&dev->dp, tl_keypair_reclaim) != 0)
		return -1;
	dev->ctrl_index_cap = TL_CTRL_INDEX_MIN;
	dev->ctrl_index = tl_dp_hash_new("tl_ctrl_index", dev->ctrl_index_cap, sizeof(uint32_t), false);
	dev->aead = tl_dp_aead_new();
	dev->ratelimit = tl_ratelimit_new("tl_ratelimit");
	if (!dev->ctrl_index || !dev->ratelimit || !dev->aead)
		return -1;
	return tl_peers_init(dev) == 0 && tl_aips_init(dev) == 0 ? 0 : -1;
}

void tl_device_objects_free(struct tl_device *dev)
{
	tl_aips_fini(dev);
	tl_peers_fini(dev);
	tl_dp_free(&dev->dp);
	rte_hash_free(dev->ctrl_index);
	tl_dp_aead_free(dev->aead);
	tl_ratelimit_free(dev->ratelimit);
	dev->ctrl_index = NULL;
	dev->aead = NULL;
	dev->ratelimit = NULL;
}
