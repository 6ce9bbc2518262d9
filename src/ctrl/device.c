/* The device's shared objects: the dataplane's (dataplane/dp.c) and the control plane's
 * own, the index table of handshakes and sessions, its AEAD context for keepalives and
 * staged packets, the per-source handshake rate limiter and the threads that compute
 * handshakes beside the control thread. */
#include "common/parfor.h"
#include "ctrl/aips.h"
#include "ctrl/device.h"
#include "ctrl/log.h"
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
	dev->hs_pool = tl_parfor_new(dev->cfg->handshake_threads, &dev->cpus);
	if (!dev->ctrl_index || !dev->ratelimit || !dev->aead || !dev->hs_pool)
		return -1;
	if (tl_parfor_helpers(dev->hs_pool) < dev->cfg->handshake_threads)
		tl_log_warn("handshakes: %u of %u threads started", tl_parfor_helpers(dev->hs_pool),
			    dev->cfg->handshake_threads);
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
	tl_parfor_free(dev->hs_pool);
	dev->hs_pool = NULL;
	dev->ctrl_index = NULL;
	dev->aead = NULL;
	dev->ratelimit = NULL;
}
