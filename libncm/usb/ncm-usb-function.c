/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-function.c: NcmFunctionInfo (a found function, refcounted), NcmMatch selectors, actionable libusb errors. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncm-cdc.h"
#include "ncm-error.h"
#include "ncm-usb-function.h"

G_DEFINE_QUARK(ncm-error-quark, ncm_error)

typedef struct {
	NcmFunctionInfo pub;
	libusb_device *dev;   /* from the context's own list; NULL if found by a fresh scan */
	int fd;               /* a duplicate of a passed usbfs fd, or -1 */
} NcmFunctionInfoPriv;

/* Spelled out: G_DEFINE_BOXED_TYPE trips -Wpedantic with GLib 2.74's headers. */
GType
ncm_function_info_get_type(void)
{
	static gsize type;

	if (g_once_init_enter(&type)) {
		GType t = g_boxed_type_register_static(g_intern_static_string("NcmFunctionInfo"),
						       (GBoxedCopyFunc)ncm_function_info_ref,
						       (GBoxedFreeFunc)ncm_function_info_unref);
		g_once_init_leave(&type, t);
	}
	return type;
}

NcmFunctionInfo *
ncm_function_info_ref(NcmFunctionInfo *info)
{
	return g_atomic_rc_box_acquire(info);
}

static void
function_info_clear(gpointer data)
{
	NcmFunctionInfoPriv *priv = data;

	g_free(priv->pub.port_path);
	g_free(priv->pub.manufacturer);
	g_free(priv->pub.product);
	g_free(priv->pub.serial);
	g_free(priv->pub.kernel_driver);
	g_free(priv->pub.access_error);
	if (priv->dev)
		libusb_unref_device(priv->dev);
	if (priv->fd >= 0)
		close(priv->fd);
}

void
ncm_function_info_unref(NcmFunctionInfo *info)
{
	if (info)
		g_atomic_rc_box_release_full(info, function_info_clear);
}

NcmFunctionInfo *
ncm_function_info_new(libusb_device *dev)
{
	NcmFunctionInfoPriv *priv = g_atomic_rc_box_new0(NcmFunctionInfoPriv);

	priv->dev = dev ? libusb_ref_device(dev) : NULL;
	priv->fd = -1;
	return &priv->pub;
}

void
ncm_function_info_take_fd(NcmFunctionInfo *info, int fd)
{
	((NcmFunctionInfoPriv *)info)->fd = fd;
}

int
ncm_function_info_get_fd(const NcmFunctionInfo *info)
{
	return ((const NcmFunctionInfoPriv *)info)->fd;
}

libusb_device *
ncm_function_info_get_usb_device(const NcmFunctionInfo *info)
{
	return ((const NcmFunctionInfoPriv *)info)->dev;
}

gchar *
ncm_function_info_dup_usbfs_path(const NcmFunctionInfo *info)
{
	return g_strdup_printf("/dev/bus/usb/%03u/%03u", info->bus, info->address);
}

/* Whether this process has @gid, as its own group or a supplementary one. */
static gboolean
in_group(gid_t gid)
{
	int n = getgroups(0, NULL);
	g_autofree gid_t *groups = NULL;

	if (getegid() == gid)
		return TRUE;
	if (n <= 0)
		return FALSE;
	groups = g_new(gid_t, n);
	n = getgroups(n, groups);
	for (int i = 0; i < n; i++) {
		if (groups[i] == gid)
			return TRUE;
	}
	return FALSE;
}

NcmAccessAdvice
ncm_usbfs_access_kind(gboolean exists, guint mode, gboolean group_is_root, gboolean in_node_group,
		      gboolean accessible)
{
	if (!exists)
		return NCM_ACCESS_ADVICE_RULE;
	/* The file's permissions let this process in: what refused it is a
	 * container's device list, a security module or a nodev mount. */
	if (accessible)
		return NCM_ACCESS_ADVICE_ELSEWHERE;
	/* A rule (libncm's 50-libncm.rules, or the one suggested) already gave
	 * the node a group that may read and write it: a new rule would not
	 * help, joining the group does. */
	if (!group_is_root && (mode & 0060) == 0060 && !in_node_group)
		return NCM_ACCESS_ADVICE_JOIN;
	return NCM_ACCESS_ADVICE_RULE;
}

static gchar *
group_name(gid_t gid)
{
	long max = sysconf(_SC_GETGR_R_SIZE_MAX);
	gsize size = max > 0 ? (gsize)max : 1024;

	for (int tries = 0; tries < 8; tries++, size *= 2) {
		g_autofree gchar *buf = g_malloc(size);
		struct group gr, *found = NULL;
		int r = getgrgid_r(gid, &gr, buf, size, &found);

		if (r == 0 && found)
			return g_strdup(found->gr_name);
		if (r != ERANGE)
			break;
	}
	return g_strdup_printf("%u", (guint)gid);
}

gchar *
ncm_usbfs_access_advice(const gchar *node, guint vid, guint pid)
{
	struct stat st;
	gboolean exists = stat(node, &st) == 0;
	NcmAccessAdvice kind = ncm_usbfs_access_kind(
		exists, exists ? (guint)st.st_mode : 0, exists && st.st_gid == 0,
		exists && in_group(st.st_gid),
		exists && faccessat(AT_FDCWD, node, R_OK | W_OK, AT_EACCESS) == 0);

	if (kind == NCM_ACCESS_ADVICE_ELSEWHERE)
		return g_strdup("its file permissions allow this process, so something else refuses "
				"it: a container's device rules (docker --device, a cgroup), a "
				"security module, or a nodev mount");
	if (kind == NCM_ACCESS_ADVICE_JOIN) {
		g_autofree gchar *name = group_name(st.st_gid);

		return g_strdup_printf("the node is group %s's, which this process is not in: add "
				       "the user to group %s and log in again, or run as root",
				       name, name);
	}
	return g_strdup_printf("run as root, or add a udev rule such as SUBSYSTEM==\"usb\", "
			       "ATTR{idVendor}==\"%04x\", ATTR{idProduct}==\"%04x\", MODE=\"0660\", "
			       "GROUP=\"plugdev\" and replug the device (libncm's 50-libncm.rules "
			       "does that for every NCM device)",
			       vid, pid);
}

void
ncm_set_usb_error(GError **error, int usb_err, const NcmFunctionInfo *info, const char *what)
{
	g_autofree gchar *node = ncm_function_info_dup_usbfs_path(info);

	switch (usb_err) {
	case LIBUSB_ERROR_ACCESS: {
		g_autofree gchar *advice = ncm_usbfs_access_advice(node, info->vid, info->pid);

		g_set_error(error, NCM_ERROR, NCM_ERROR_PERMISSION, "%s: no permission on %s: %s",
			    what, node, advice);
		break;
	}
	case LIBUSB_ERROR_BUSY:
		g_set_error(error, NCM_ERROR, NCM_ERROR_BUSY,
			    "%s: %s (%04x:%04x) is claimed by another process or driver: "
			    "stop the other program (another ncm-tun?) and try again",
			    what, node, info->vid, info->pid);
		break;
	case LIBUSB_ERROR_NO_MEM:
		/* usbfs's cap on transfer memory, for all devices of the host. */
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "%s on %s (%04x:%04x): out of memory for USB transfers: usbfs caps "
			    "them at /sys/module/usbcore/parameters/usbfs_memory_mb (16 MiB by "
			    "default, for every device together); raise it (echo 64 > that file, "
			    "as root) or open fewer devices",
			    what, node, info->vid, info->pid);
		break;
	case LIBUSB_ERROR_NO_DEVICE:
	case LIBUSB_ERROR_NOT_FOUND:
		g_set_error(error, NCM_ERROR, NCM_ERROR_GONE,
			    "%s: %s (%04x:%04x) is gone: it was unplugged or reset; replug it",
			    what, node, info->vid, info->pid);
		break;
	default:
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "%s on %s (%04x:%04x) failed: %s; replug the device, and report it "
			    "with ncm-probe's output if it persists",
			    what, node, info->vid, info->pid, libusb_strerror(usb_err));
	}
}

static gboolean
parse_mac(const gchar *s, guint8 mac[6])
{
	unsigned v[6];

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6 ||
	    strlen(s) != 17)
		return FALSE;
	for (int i = 0; i < 6; i++)
		mac[i] = (guint8)v[i];
	return TRUE;
}

gboolean
ncm_match_parse(NcmMatch *match, const gchar *text, GError **error)
{
	unsigned vid, pid;
	char tail;

	if (g_str_has_prefix(text, "serial=")) {
		match->serial = text + 7;
	} else if (g_str_has_prefix(text, "path=")) {
		match->port_path = text + 5;
	} else if (g_str_has_prefix(text, "mac=")) {
		if (!parse_mac(text + 4, match->mac))
			goto bad;
		match->have_mac = TRUE;
	} else if (sscanf(text, "%4x:%4x%c", &vid, &pid, &tail) == 2) {
		match->vid = (guint16)vid;
		match->pid = (guint16)pid;
	} else {
		goto bad;
	}
	return TRUE;
bad:
	g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
		    "cannot understand device selector \"%s\": use VID:PID (hex), serial=S, "
		    "path=BUS-PORT[.PORT...] or mac=aa:bb:cc:dd:ee:ff", text);
	return FALSE;
}

/*
 * An iPhone's USB serial (iPhone XS on: 24 hex digits) is its UDID, which
 * the tools users copy it from print with a dash after the 8th: for Apple's
 * devices either form selects it.
 */
gboolean
ncm_usb_serial_matches(const gchar *want, const gchar *serial, guint16 vid)
{
	if (!g_strcmp0(want, serial))
		return TRUE;
	if (vid != NCM_APPLE_VID || !want || !serial)
		return FALSE;
	for (;;) {
		while (*want == '-')
			want++;
		while (*serial == '-')
			serial++;
		if (g_ascii_tolower(*want) != g_ascii_tolower(*serial))
			return FALSE;
		if (!*want)
			return TRUE;
		want++;
		serial++;
	}
}

gboolean
ncm_match_ids(const NcmMatch *match, guint16 vid, guint16 pid)
{
	return !match || ((!match->vid || match->vid == vid) && (!match->pid || match->pid == pid));
}

gboolean
ncm_match_test(const NcmMatch *match, const NcmFunctionInfo *info)
{
	if (!ncm_match_ids(match, info->vid, info->pid))
		return FALSE;
	if (match->serial && !ncm_usb_serial_matches(match->serial, info->serial, info->vid))
		return FALSE;
	if (match->port_path && g_strcmp0(match->port_path, info->port_path) != 0)
		return FALSE;
	if (match->have_mac && (!info->have_mac || memcmp(match->mac, info->mac, 6) != 0))
		return FALSE;
	return TRUE;
}
