/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-open.c: claiming the two interfaces and negotiating NTB parameters. */
#include <string.h>
#include <unistd.h>

#include "ncm-le.h"
#include "ncm-usb-device.h"

/* The largest receive NTB a device may insist on (buffers: 2 per transfer). */
#define NCM_RX_NTB_HARD_MAX (1024 * 1024)


#define NCM_NTB_SIZE_CAP 65536u
#define NCM_DATA_ALT_PAUSE_MS 20
#define NCM_NTB_SIZE_MIN 2048u
#define NCM_ETH_MAX_FRAME 1514u
/* Two VLAN tags (802.1Q, or 802.1ad's QinQ): a VLAN's frames are this much
 * longer than the MTU allows. */
#define NCM_VLAN_TAGS_LEN 8u

/*
 * Takes the kernel's driver off interface @iface of configuration @config
 * (the NCM function's, or the active one before a switch away from it);
 * @driver is its name when known.
 */
static gboolean
detach(NcmDevice *self, int config, guint8 iface, const gchar *driver, gboolean *ret_detached,
       GError **error)
{
	const NcmFunctionInfo *info = self->info;
	g_autofree gchar *who = driver ? g_strdup_printf("the kernel driver %s", driver)
				       : g_strdup("a kernel driver");
	int r = libusb_kernel_driver_active(self->handle, iface);

	*ret_detached = FALSE;
	if (r != 1)
		return TRUE;  /* none bound, or the platform cannot tell: claiming will say */
	if (!self->options.detach_kernel_driver) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_KERNEL_DRIVER,
			    "%s is still bound to interface %u of %04x:%04x: "
			    "unbind it (echo %s:%d.%u > /sys/bus/usb/drivers/%s/unbind) or let "
			    "libncm detach it",
			    who, iface, info->vid, info->pid, info->port_path, config, iface,
			    driver ? driver : "DRIVER");
		return FALSE;
	}
	r = libusb_detach_kernel_driver(self->handle, iface);
	if (r == LIBUSB_ERROR_NOT_FOUND)
		return TRUE;  /* detaching the comm interface released the data one too */
	if (r == LIBUSB_ERROR_NO_DEVICE) {
		ncm_set_usb_error(error, r, info, "detaching the kernel driver");
		return FALSE;
	}
	if (r < 0) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_KERNEL_DRIVER,
			    "cannot detach %s from interface %u of %04x:%04x (%s): "
			    "unbind it by hand or run as root",
			    who, iface, info->vid, info->pid, libusb_strerror(r));
		return FALSE;
	}
	*ret_detached = TRUE;
	return TRUE;
}

/*
 * The kernel refuses SET_CONFIGURATION while any interface of the active
 * configuration has a driver (a phone's ipheth, a gadget's cdc_acm): with
 * leave to detach, the kernel's drivers go first. A program's claim
 * (usbfs) is not ours to end: the switch then reports it.
 */
static gboolean
release_active_config(NcmDevice *self, int active, guint32 *ret_detached, GError **error)
{
	struct libusb_config_descriptor *cfg = NULL;
	gboolean ok = TRUE;

	*ret_detached = 0;
	if (libusb_get_active_config_descriptor(libusb_get_device(self->handle), &cfg) < 0)
		return TRUE;  /* the switch itself will say what is wrong */
	for (guint8 i = 0; ok && i < cfg->bNumInterfaces; i++) {
		gboolean detached = FALSE;
		guint8 n;

		if (cfg->interface[i].num_altsetting < 1)
			continue;
		n = cfg->interface[i].altsetting[0].bInterfaceNumber;
		ok = detach(self, active, n, NULL, &detached, error);
		if (detached && n < 32)
			*ret_detached |= 1u << n;
	}
	libusb_free_config_descriptor(cfg);
	if (!ok)
		g_prefix_error(error, "switching to configuration %u: ", self->info->config_value);
	return ok;
}

/*
 * NCM_TEST_FAIL_SET_CONFIG (test builds only): the switch fails after the
 * drivers were detached, so that their return is tested; no device in the
 * VM refuses SET_CONFIGURATION.
 */
static int
set_configuration(NcmDevice *self, int value)
{
#ifdef NCM_TEST_HOOKS
	if (g_getenv("NCM_TEST_FAIL_SET_CONFIG")) {
		g_message("test hook: NCM_TEST_FAIL_SET_CONFIG: SET_CONFIGURATION(%d) fails", value);
		return LIBUSB_ERROR_IO;
	}
#endif
	return libusb_set_configuration(self->handle, value);
}

static gboolean
select_config(NcmDevice *self, GError **error)
{
	const NcmFunctionInfo *info = self->info;
	guint32 detached = 0;
	gboolean ok;
	int active = 0, r;

	r = libusb_get_configuration(self->handle, &active);
	if (r < 0) {
		ncm_set_usb_error(error, r, info, "reading the active configuration");
		return FALSE;
	}
	if (active == info->config_value)
		return TRUE;
	if (!self->options.switch_config) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_CONFIG_INACTIVE,
			    "the NCM function of %04x:%04x is in configuration %u but %d is active: "
			    "allow switching configuration (--switch-config in ncm-tun and ncm-proxy, "
			    "NcmDeviceOptions.switch_config in the API) if nothing else uses the "
			    "device (switching disturbs e.g. usbmuxd)",
			    info->vid, info->pid, info->config_value, active);
		return FALSE;
	}
	ok = release_active_config(self, active, &detached, error);
	r = ok ? set_configuration(self, info->config_value) : 0;
	/* Not switched: the drivers we took off the active configuration go back. */
	for (guint8 n = 0; (!ok || r < 0) && n < 32; n++)
		if (detached & (1u << n))
			libusb_attach_kernel_driver(self->handle, n);
	if (!ok)
		return FALSE;
	if (r == LIBUSB_ERROR_BUSY) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_BUSY,
			    "switching %04x:%04x to configuration %u: a program holds an interface "
			    "of configuration %d (on an iPhone or iPad, usbmuxd): stop it and try "
			    "again, or leave this device to it",
			    info->vid, info->pid, info->config_value, active);
		return FALSE;
	}
	if (r < 0) {
		ncm_set_usb_error(error, r, info, "switching configuration");
		return FALSE;
	}
	return TRUE;
}

static gboolean
claim(NcmDevice *self, guint8 iface, gboolean *ret_claimed, GError **error)
{
	int r = libusb_claim_interface(self->handle, iface);

	if (r < 0) {
		g_autofree gchar *what = g_strdup_printf("claiming interface %u", iface);

		ncm_set_usb_error(error, r, self->info, what);
		return FALSE;
	}
	*ret_claimed = TRUE;
	return TRUE;
}

gboolean
ncm_device_claim(NcmDevice *self, GError **error)
{
	const NcmFunctionInfo *info = self->info;
	gboolean detached_data;

	if (!select_config(self, error))
		return FALSE;
	if (!detach(self, info->config_value, info->comm_iface, info->kernel_driver,
		    &self->detached_comm, error) ||
	    !detach(self, info->config_value, info->data_iface, info->kernel_driver,
		    &detached_data, error))
		return FALSE;
	self->detached_comm |= detached_data;
	return claim(self, info->comm_iface, &self->claimed_comm, error) &&
	       claim(self, info->data_iface, &self->claimed_data, error);
}

/* ---- Class requests --------------------------------------------------- */

static int
class_out(NcmDevice *self, guint8 request, guint16 value, guint8 *data, guint16 len)
{
	return libusb_control_transfer(self->handle, 0x21, request, value, self->info->comm_iface,
				       data, len, NCM_CONTROL_TIMEOUT_MS);
}

static int
class_in(NcmDevice *self, guint8 request, guint8 *data, guint16 len)
{
	return libusb_control_transfer(self->handle, 0xA1, request, 0, self->info->comm_iface, data,
				       len, NCM_CONTROL_TIMEOUT_MS);
}

/*
 * Unplugged while a control transfer is pending, a device fails it with an
 * I/O error (the host controller's protocol or shutdown error) before the
 * hub has reported the disconnect: seen in the VM for every request of the
 * open sequence (vm-ffs-vanish). Only a STALL is the device's own answer;
 * for anything else, whether it is gone decides what the caller is told,
 * so the kernel gets a moment to say it.
 */
#define NCM_GONE_CHECK_US (1 * G_USEC_PER_SEC)
#define NCM_GONE_POLL_US (50 * G_TIME_SPAN_MILLISECOND)

static gboolean
device_gone(NcmDevice *self, int r)
{
	gint64 end = g_get_monotonic_time() + NCM_GONE_CHECK_US;
	int config;

	if (r == LIBUSB_ERROR_NO_DEVICE)
		return TRUE;
	if (r >= 0 || r == LIBUSB_ERROR_PIPE)
		return FALSE;
	do {
		if (libusb_get_configuration(self->handle, &config) == LIBUSB_ERROR_NO_DEVICE)
			return TRUE;
		g_usleep(NCM_GONE_POLL_US);
	} while (g_get_monotonic_time() < end);
	return FALSE;
}

static gboolean
request_failed(NcmDevice *self, int r, const char *what, GError **error)
{
	if (device_gone(self, r)) {
		ncm_set_usb_error(error, LIBUSB_ERROR_NO_DEVICE, self->info, what);
	} else {
		g_set_error(error, NCM_ERROR, NCM_ERROR_PROTOCOL,
			    "%s on %04x:%04x failed (%s): the device does not speak NCM as expected; "
			    "replug it, and report it with ncm-probe's output if it persists",
			    what, self->info->vid, self->info->pid, libusb_strerror(r));
	}
	return FALSE;
}

static gboolean
get_ntb_parameters(NcmDevice *self, NcmNtbParams *params, GError **error)
{
	guint8 buf[28];
	unsigned fixups = 0;
	int r = class_in(self, NCM_REQ_GET_NTB_PARAMETERS, buf, sizeof(buf));

	if (r < 0)
		return request_failed(self, r, "GET_NTB_PARAMETERS", error);
	NcmParamsStatus st = ncm_params_parse(buf, (size_t)r, params, &fixups);
	if (st != NCM_PARAMS_OK) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_PROTOCOL,
			    "%04x:%04x sent invalid NTB parameters (%s): it cannot be driven; "
			    "report it with ncm-probe's output",
			    self->info->vid, self->info->pid, ncm_params_status_name(st));
		return FALSE;
	}
	if (fixups)
		g_debug("GET_NTB_PARAMETERS: %u divisors/alignments replaced by 4", fixups);
	return TRUE;
}

static guint32
pick_size(guint requested, guint32 device_max)
{
	guint32 size = requested ? requested : NCM_NTB_SIZE_CAP;

	size = MIN(size, device_max);
	size = MIN(size, NCM_NTB_SIZE_CAP);
	return MAX(size, NCM_NTB_SIZE_MIN);
}

/*
 * OUT NTBs never exceed a dwNtbOutMaxSize under the spec's 2048 (the MTU
 * then follows what fits: clamp_max_frame()). One of 0 says nothing, and
 * NTBs of 2048 carry one frame each, as Linux' cdc_ncm ends up sending,
 * unless the owner asked for a size (NcmDeviceOptions.tx_ntb_size).
 */
static guint32
pick_tx_size(guint requested, guint32 device_max)
{
	if (device_max == 0)
		return requested ? CLAMP(requested, NCM_NTB_SIZE_MIN, NCM_NTB_SIZE_CAP)
				 : NCM_NTB_SIZE_MIN;
	if (device_max < NCM_NTB_SIZE_MIN)
		return device_max;
	return pick_size(requested, device_max);
}

/* The NTB size the device actually uses after SET_NTB_INPUT_SIZE(@size):
 * its own maximum when it refused, what GET_NTB_INPUT_SIZE says when it
 * answers that, else @size. */
static guint32
input_size_in_use(NcmDevice *self, guint32 size, int set_result)
{
	guint8 buf[8];
	int r;

	if (set_result < 0) {
		g_debug("SET_NTB_INPUT_SIZE(%u) refused", size);
		return self->ntb.in_max_size;
	}
	r = class_in(self, NCM_REQ_GET_NTB_INPUT_SIZE, buf, sizeof(buf));
	if (r < 4)
		return size;
	return ncm_le32_at(buf, (size_t)r, 0);
}

/*
 * Our receive buffers must hold what the device sends. A device that
 * refuses or ignores the size we ask for keeps its own, which may be far
 * above 64 KiB: the buffers grow to it (up to NCM_RX_NTB_HARD_MAX), or
 * opening fails saying why, rather than every NTB being cut short.
 */
static gboolean
set_input_size(NcmDevice *self, GError **error)
{
	const guint32 in_max = self->ntb.in_max_size;
	/* Never more than the device says it sends, even under the spec's 2048:
	 * the receive buffers stay at 2048 (NCM_NTB_SIZE_MIN) all the same. */
	guint32 size = in_max && in_max < self->ntb.rx_ntb_size ? in_max : self->ntb.rx_ntb_size;
	guint32 used;
	/* With bmNetworkCapabilities bit 5 the request carries 8 bytes (NCM
	 * 1.0, 6.2.7): the size, then wNtbInMaxDatagrams, 0 for no limit. */
	guint8 le[8] = { 0 };
	guint16 n = self->info->net_caps & NCM_CAP_NTB_INPUT_8 ? 8 : 4;
	int r;

	ncm_le32_put(le, sizeof(le), 0, size);
	r = class_out(self, NCM_REQ_SET_NTB_INPUT_SIZE, 0, le, n);
	if (device_gone(self, r))
		return request_failed(self, r, "SET_NTB_INPUT_SIZE", error);
	used = input_size_in_use(self, size, r);
	if (used <= self->ntb.rx_ntb_size)
		return TRUE;
	if (used > NCM_RX_NTB_HARD_MAX) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_PROTOCOL,
			    "%04x:%04x keeps sending NTBs of up to %u bytes (it %s a size of %u), "
			    "more than libncm's limit of %u: it cannot be driven; report it with "
			    "ncm-probe's output",
			    self->info->vid, self->info->pid, used, r < 0 ? "refused" : "ignored",
			    size, NCM_RX_NTB_HARD_MAX);
		return FALSE;
	}
	g_warning("%04x:%04x %s an NTB input size of %u and uses %u: receive buffers follow it",
		  self->info->vid, self->info->pid, r < 0 ? "refused" : "ignored", size, used);
	self->ntb.rx_ntb_size = used;
	return TRUE;
}

/*
 * The device's answer after SET_MAX_DATAGRAM_SIZE(want) differs from want.
 * Less: its limit rules what libncm sends, so the MTU follows it; what it
 * sends is still taken up to wMaxSegmentSize (and VLAN tags), as Linux'
 * cdc_ncm takes it.
 * More: libncm keeps want, the most it ever sends, and takes datagrams up to
 * the answer. Nothing usable: want, both ways. Either way it is said, since
 * the owner's MTU depends on it.
 */
static void
reconcile_datagram_size(NcmDevice *self, guint16 want, int r, const guint8 *buf)
{
	const NcmFunctionInfo *info = self->info;
	guint16 got = r == 2 ? ncm_le16_at(buf, 2, 0) : 0;

	if (got == want)
		return;
	if (got >= NCM_ETH_MIN_FRAME + 46 && got < want) {
		g_warning("%04x:%04x takes datagrams of at most %u bytes, not %u: using an MTU of %u",
			  info->vid, info->pid, got, want, got - 14u);
		self->ntb.max_frame = got;
	} else if (got > want) {
		self->rx_max_frame = MAX(self->rx_max_frame, got + NCM_VLAN_TAGS_LEN);
		g_warning("%04x:%04x answers a maximum datagram size of %u after libncm set %u: "
			  "libncm sends at most %u (MTU %u) and accepts up to %u", info->vid,
			  info->pid, got, want, want, want - 14u, self->rx_max_frame);
	} else {
		g_autofree gchar *why = r == 2 ? g_strdup_printf("it answered %u", got) :
				       r < 0	? g_strdup(libusb_strerror(r)) :
						  g_strdup_printf("a reply of %d bytes", r);

		g_warning("%04x:%04x gave no usable maximum datagram size after libncm set %u "
			  "(GET_MAX_DATAGRAM_SIZE: %s): assuming it takes %u", info->vid, info->pid,
			  want, why, want);
	}
}

static gboolean
negotiate_datagram_size(NcmDevice *self, GError **error)
{
	guint16 want = self->ntb.max_frame;
	guint8 buf[2];
	int r;

	if (!(self->info->net_caps & NCM_CAP_MAX_DATAGRAM))
		return TRUE;
	r = class_in(self, NCM_REQ_GET_MAX_DATAGRAM_SIZE, buf, sizeof(buf));
	if (device_gone(self, r))
		return request_failed(self, r, "GET_MAX_DATAGRAM_SIZE", error);
	if (r == 2 && ncm_le16_at(buf, (size_t)r, 0) == want)
		return TRUE;
	ncm_le16_put(buf, sizeof(buf), 0, want);
	r = class_out(self, NCM_REQ_SET_MAX_DATAGRAM_SIZE, 0, buf, sizeof(buf));
	if (device_gone(self, r))
		return request_failed(self, r, "SET_MAX_DATAGRAM_SIZE", error);
	if (r < 0)
		g_debug("SET_MAX_DATAGRAM_SIZE(%u) refused", want);
	/* What the device says it takes now is what it takes, if less. */
	r = class_in(self, NCM_REQ_GET_MAX_DATAGRAM_SIZE, buf, sizeof(buf));
	if (device_gone(self, r))
		return request_failed(self, r, "GET_MAX_DATAGRAM_SIZE", error);
	reconcile_datagram_size(self, want, r, buf);
	return TRUE;
}

static gboolean
optional_request(NcmDevice *self, guint8 cap, guint8 request, guint16 value, const char *what,
		 GError **error)
{
	int r;

	if (!(self->info->net_caps & cap))
		return TRUE;
	r = class_out(self, request, value, NULL, 0);
	if (device_gone(self, r))
		return request_failed(self, r, what, error);
	/*
	 * CRC mode 0 is the reset default, so a refusal may be harmless; but a
	 * device that stays in CRC mode marks its NDPs NCM1/ncm1, which libncm
	 * (never in CRC mode) rejects one NTB at a time. The warning names the
	 * counter to look at before anyone wonders why nothing arrives.
	 */
	if (r < 0 && request == NCM_REQ_SET_CRC_MODE)
		g_warning("%04x:%04x offers CRC mode but refused SET_CRC_MODE(0) (%s): libncm takes "
			  "no CRCs, so if it appends them anyway its NTBs are rejected and counted "
			  "as ndp-crc", self->info->vid, self->info->pid, libusb_strerror(r));
	else if (r < 0)
		g_debug("%s refused: %s", what, libusb_strerror(r));
	return TRUE;
}

static void
fill_ntb_info(NcmDevice *self, const NcmNtbParams *p)
{
	NcmNtbInfo *n = &self->ntb;
	const NcmDeviceOptions *o = &self->options;

	n->formats = p->formats;
	n->in_max_size = p->in_max_size;
	n->in_divisor = p->in_divisor;
	n->in_remainder = p->in_remainder;
	n->in_alignment = p->in_alignment;
	n->out_max_size = p->out_max_size;
	n->out_divisor = p->out_divisor;
	n->out_remainder = p->out_remainder;
	n->out_alignment = p->out_alignment;
	n->out_max_datagrams = p->out_max_datagrams;
	n->ntb32 = o->ntb32 && (p->formats & NCM_NTB_FORMAT_BIT_32);
	n->rx_ntb_size = pick_size(o->rx_ntb_size, p->in_max_size);
	n->tx_ntb_size = pick_tx_size(o->tx_ntb_size, p->out_max_size);
	if (p->in_max_size < NCM_NTB_SIZE_MIN || p->out_max_size < NCM_NTB_SIZE_MIN)
		g_warning("%04x:%04x gives NTB sizes under the spec's minimum of %u "
			  "(dwNtbInMaxSize %u, dwNtbOutMaxSize %u): libncm receives into %u bytes "
			  "and sends NTBs of at most %u", self->info->vid, self->info->pid,
			  NCM_NTB_SIZE_MIN, p->in_max_size, p->out_max_size, n->rx_ntb_size,
			  n->tx_ntb_size);
	/* Ethernet's 1514 at least, as Linux' cdc_ncm: a smaller wMaxSegmentSize
	 * is taken for a descriptor error, but said, as the MTU is then larger. */
	n->max_frame = MAX(self->info->max_segment_size, NCM_ETH_MAX_FRAME);
	/* What the MTU allows, and two VLAN tags: an 802.1Q frame of a full MTU
	 * is 1518 bytes, a QinQ one 1522. cdc_ncm checks no length but the
	 * NTB's; a limit still turns a device's garbage lengths into rejects.
	 * Later limits (GET_MAX_DATAGRAM_SIZE, the OUT NTBs' room) bind what
	 * libncm sends, not this. */
	self->rx_max_frame = n->max_frame + NCM_VLAN_TAGS_LEN;
	if (self->info->max_segment_size < NCM_ETH_MAX_FRAME)
		g_message("%04x:%04x: wMaxSegmentSize %u is under Ethernet's %u: using %u (MTU "
			  "1500); lower the MTU by hand if the device needs it",
			  self->info->vid, self->info->pid, self->info->max_segment_size,
			  NCM_ETH_MAX_FRAME, NCM_ETH_MAX_FRAME);
}

/*
 * iMACAddress is the MAC the host side uses. A function without a usable
 * one (missing, all zero, multicast) gets a locally administered address
 * derived from its identity: stable across sessions, so the host's
 * interface and its neighbours keep one MAC through a replug. Returns TRUE
 * when the MAC is made up.
 */
static gboolean
pick_mac(NcmDevice *self)
{
	const NcmFunctionInfo *info = self->info;
	g_autofree gchar *key = NULL;
	guint8 digest[32];
	gsize len = sizeof(digest);
	GChecksum *sum;

	if (info->have_mac && ncm_cdc_mac_usable(info->mac)) {
		memcpy(self->mac, info->mac, 6);
		return FALSE;
	}
	key = g_strdup_printf("%04x:%04x:%s:%s:%u", info->vid, info->pid,
			      info->serial ? info->serial : "", info->port_path ? info->port_path : "",
			      info->comm_iface);
	sum = g_checksum_new(G_CHECKSUM_SHA256);
	g_checksum_update(sum, (const guchar *)key, -1);
	g_checksum_get_digest(sum, digest, &len);
	g_checksum_free(sum);
	memcpy(self->mac, digest, 6);
	ncm_cdc_mac_make_local(self->mac);
	g_warning("%04x:%04x has %s iMACAddress: using %02x:%02x:%02x:%02x:%02x:%02x, a locally "
		  "administered address derived from the function's identity",
		  info->vid, info->pid, info->have_mac ? "an unusable (zero or multicast)" : "no",
		  self->mac[0], self->mac[1], self->mac[2], self->mac[3], self->mac[4], self->mac[5]);
	return TRUE;
}

/*
 * A made-up MAC is told to a device that takes one (SET_NET_ADDRESS): a
 * USB Ethernet adapter filters unicast on its own address, and would drop
 * every frame to ours, ARP replies too.
 */
static gboolean
tell_mac(NcmDevice *self, GError **error)
{
	int r;

	if (!(self->info->net_caps & NCM_CAP_NET_ADDRESS))
		return TRUE;
	r = class_out(self, NCM_REQ_SET_NET_ADDRESS, 0, self->mac, 6);
	if (device_gone(self, r))
		return request_failed(self, r, "SET_NET_ADDRESS", error);
	if (r < 0)
		g_warning("%04x:%04x refused SET_NET_ADDRESS (%s): if it filters on its own "
			  "address, unicast frames to this MAC will not arrive; if nothing does, "
			  "report it with ncm-probe's output", self->info->vid, self->info->pid,
			  libusb_strerror(r));
	return TRUE;
}

gboolean
ncm_device_negotiate(NcmDevice *self, GError **error)
{
	const NcmFunctionInfo *info = self->info;
	NcmNtbParams params;
	guint8 filter = self->options.packet_filter;
	int r;

	/*
	 * SET_NTB_FORMAT is only accepted while the data interface is at alt 0.
	 * The data alt first: some devices reset their data path only on the
	 * way from it to 0 (Linux' cdc_ncm does the same). Its failure is the
	 * device's affair; alt 0's is ours.
	 */
	if (info->data_alt != 0) {
		r = libusb_set_interface_alt_setting(self->handle, info->data_iface, info->data_alt);
		if (r < 0)
			g_debug("data alt %u before alt 0: %s", info->data_alt, libusb_strerror(r));
	}
	r = libusb_set_interface_alt_setting(self->handle, info->data_iface, 0);
	if (r < 0)
		return request_failed(self, r, "selecting data alt setting 0", error);
	if (!get_ntb_parameters(self, &params, error))
		return FALSE;
	fill_ntb_info(self, &params);
	if (params.formats & NCM_NTB_FORMAT_BIT_32) {
		r = class_out(self, NCM_REQ_SET_NTB_FORMAT, self->ntb.ntb32 ? 1 : 0, NULL, 0);
		/* Refused: NTB16 is what alt 0 reset it to (Linux' cdc_ncm goes on too). */
		if (r == LIBUSB_ERROR_PIPE && self->ntb.ntb32) {
			g_warning("%04x:%04x refused SET_NTB_FORMAT (NTB32): using NTB16, its "
				  "format after reset", self->info->vid, self->info->pid);
			self->ntb.ntb32 = FALSE;
		} else if (r == LIBUSB_ERROR_PIPE) {
			g_debug("SET_NTB_FORMAT (NTB16) refused: NTB16 is the format after reset");
		} else if (r < 0) {
			return request_failed(self, r, "SET_NTB_FORMAT", error);
		}
	}
	if (!set_input_size(self, error) || !negotiate_datagram_size(self, error))
		return FALSE;
	if (!optional_request(self, NCM_CAP_CRC_MODE, NCM_REQ_SET_CRC_MODE, 0, "SET_CRC_MODE",
			      error))
		return FALSE;
	if (!filter)
		filter = NCM_FILTER_DIRECTED | NCM_FILTER_BROADCAST | NCM_FILTER_ALL_MULTICAST;
	if (!optional_request(self, NCM_CAP_PACKET_FILTER, NCM_REQ_SET_ETHERNET_PACKET_FILTER,
			      filter, "SET_ETHERNET_PACKET_FILTER", error))
		return FALSE;
	if (pick_mac(self) && !tell_mac(self, error))
		return FALSE;
	/* Some firmwares silently set up no data path without a pause here
	 * (Linux' cdc_ncm waits 20 ms, found on a Sierra Wireless MC7455). */
	g_usleep(NCM_DATA_ALT_PAUSE_MS * 1000);
	r = libusb_set_interface_alt_setting(self->handle, info->data_iface, info->data_alt);
	if (r < 0)
		return request_failed(self, r, "selecting the data alt setting", error);
	return TRUE;
}

void
ncm_device_release(NcmDevice *self)
{
	const NcmFunctionInfo *info = self->info;
	gboolean gone = g_atomic_int_get(&self->gone);

	if (!self->handle)
		return;
	if (self->claimed_data) {
		/* Alt 0 stops the function's data path, as the kernel does on unbind. */
		if (!gone)
			libusb_set_interface_alt_setting(self->handle, info->data_iface, 0);
		libusb_release_interface(self->handle, info->data_iface);
	}
	if (self->claimed_comm)
		libusb_release_interface(self->handle, info->comm_iface);
	self->claimed_data = self->claimed_comm = FALSE;
	if (self->detached_comm && !gone) {
		int r = libusb_attach_kernel_driver(self->handle, info->comm_iface);

		if (r < 0 && r != LIBUSB_ERROR_NO_DEVICE)
			g_debug("re-attaching the kernel driver: %s", libusb_strerror(r));
	}
	libusb_close(self->handle);
	self->handle = NULL;
	if (self->fd >= 0) {
		/* libusb leaves a wrapped node open: it is ours to close. */
		close(self->fd);
		self->fd = -1;
	}
}
