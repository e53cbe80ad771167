/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-buf.c: transfer buffers in usbfs-mapped memory where the platform offers it. */
#include <stdlib.h>

#include "ncm-usb-device.h"

/*
 * Why: an ordinary buffer costs usbfs a kernel allocation per submission
 * and a copy per completion. Memory from libusb_dev_mem_alloc() is the
 * kernel's own buffer mapped into us (Linux usbfs mmap), so an NTB lands
 * where we parse it and a packed NTB leaves from where we packed it.
 * Elsewhere, or past usbfs's memory limit, it returns NULL: plain memory,
 * same behaviour. NCM_NO_DEV_MEM=1 forces plain memory (a host controller
 * that mishandles mapped buffers).
 */
guint8 *
ncm_device_buf_alloc(NcmDevice *self, gsize size)
{
	guint8 *buf = NULL;

	if (!self->dev_mem)
		self->dev_mem = g_hash_table_new(NULL, NULL);
	if (!g_getenv("NCM_NO_DEV_MEM"))
		buf = libusb_dev_mem_alloc(self->handle, size);
	if (!buf)
		return g_malloc(size);
	g_hash_table_add(self->dev_mem, buf);
	return buf;
}

/* Before the handle closes: mapped buffers belong to it. Accepts NULL. */
void
ncm_device_buf_free(NcmDevice *self, guint8 *buf, gsize size)
{
	if (!buf)
		return;
	if (self->dev_mem && g_hash_table_remove(self->dev_mem, buf))
		libusb_dev_mem_free(self->handle, buf, size);
	else
		g_free(buf);
}

/* Buffers in mapped memory now (tests and statistics). */
guint
ncm_device_buf_mapped(NcmDevice *self)
{
	return self->dev_mem ? g_hash_table_size(self->dev_mem) : 0;
}
