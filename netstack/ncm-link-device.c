/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-link-device.c: NcmLink over an NcmDevice: the driver's own data path, no copies added. */
#include "ncm-link-private.h"

typedef struct {
	NcmLink link;
	NcmDevice *device;
} DeviceLink;

static NcmSendResult
device_sendv(NcmLink *link, const GOutputVector *vectors, guint n_vectors)
{
	return ncm_device_sendv(((DeviceLink *)link)->device, vectors, n_vectors);
}

static void
device_flush(NcmLink *link)
{
	ncm_device_flush(((DeviceLink *)link)->device);
}

static void
device_set_sink(NcmLink *link, const NcmLinkSink *sink, gpointer user_data)
{
	ncm_device_set_sink(((DeviceLink *)link)->device, sink, user_data);
}

static void
device_set_writable_batched(NcmLink *link, gboolean batched)
{
	ncm_device_set_writable_batched(((DeviceLink *)link)->device, batched);
}

static void
device_set_sender_flushes(NcmLink *link, gboolean flushes)
{
	ncm_device_set_sender_flushes(((DeviceLink *)link)->device, flushes);
}

static guint64
device_queue_limit(NcmLink *link)
{
	return ncm_device_get_tx_queue_limit(((DeviceLink *)link)->device);
}

static gboolean
device_start(NcmLink *link, GError **error)
{
	return ncm_device_start(((DeviceLink *)link)->device, error);
}

static void
device_stop(NcmLink *link)
{
	ncm_device_close(((DeviceLink *)link)->device);
}

static void
device_free(NcmLink *link)
{
	DeviceLink *d = (DeviceLink *)link;

	g_object_unref(d->device);
	g_free(d);
}

static const NcmLinkOps device_ops = {
	.sendv = device_sendv,
	.flush = device_flush,
	.set_sink = device_set_sink,
	.set_writable_batched = device_set_writable_batched,
	.set_sender_flushes = device_set_sender_flushes,
	.queue_limit = device_queue_limit,
	.start = device_start,
	.stop = device_stop,
	.free = device_free,
};

NcmLink *
ncm_link_new_for_device(NcmDevice *device)
{
	DeviceLink *d = g_new0(DeviceLink, 1);

	d->link.ops = &device_ops;
	d->device = g_object_ref(device);
	ncm_device_get_mac(device, d->link.mac);
	d->link.max_frame = ncm_device_get_max_frame(device);
	return &d->link;
}

void
ncm_link_free(NcmLink *link)
{
	if (link)
		link->ops->free(link);
}
