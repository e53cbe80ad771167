/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-frames: opens the first NCM device and prints each received frame's Ethernet header (libncm alone). */
#include <ncm.h>
#include <stdio.h>

/*
 * Build: cc ncm-frames.c $(pkg-config --cflags --libs libncm)
 * Run:   ncm-frames [COUNT]   (stops after COUNT frames, or on unplug)
 */

typedef struct {
	GMainLoop *loop;
	guint left;   /* frames still to print; 0 = no limit */
	guint seen;   /* touched on the libusb thread only */
} App;

/* The owner's main context, from on_frame(). */
static gboolean
quit_idle(gpointer loop)
{
	g_main_loop_quit(loop);
	return G_SOURCE_REMOVE;
}

/* The libusb event thread, once per frame: @frame is only valid during the
 * call. Printing here is fine for a demo; real code must not block. */
static void
on_frame(gpointer data, const guint8 *frame, gsize len)
{
	App *app = data;
	const guint8 *dst = frame, *src = frame + 6;

	if (len < 14 || (app->left != 0 && app->seen >= app->left))
		return;
	printf("%02x:%02x:%02x:%02x:%02x:%02x < %02x:%02x:%02x:%02x:%02x:%02x type 0x%04x len %zu\n",
	       dst[0], dst[1], dst[2], dst[3], dst[4], dst[5], src[0], src[1], src[2], src[3],
	       src[4], src[5], (guint)(frame[12] << 8 | frame[13]), len);
	fflush(stdout);
	/* The main loop owns the exit: hand it over, never quit from here. */
	if (++app->seen == app->left)
		g_idle_add(quit_idle, app->loop);
}

/* The end of one NTB's frames: nothing to flush in a reader. */
static void
on_ntb_done(gpointer data)
{
}

/* Room to send again: this program never sends. */
static void
on_writable(gpointer data)
{
}

/* The owner's main context: the device went away. */
static void
on_removed(NcmDevice *device, gpointer data)
{
	App *app = data;

	printf("device removed\n");
	g_main_loop_quit(app->loop);
}

int
main(int argc, char **argv)
{
	/* Designated: the struct ends in a reserve for callbacks added later. */
	static const NcmLinkSink sink = {
		.receive = on_frame,
		.receive_done = on_ntb_done,
		.writable = on_writable,
	};
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = NULL;
	g_autoptr(GPtrArray) found = NULL;
	g_autoptr(NcmDevice) dev = NULL;
	App app = {.left = argc > 1 ? (guint)g_ascii_strtoull(argv[1], NULL, 10) : 0};
	guint8 mac[6];

	ctx = ncm_context_new(&error);
	if (ctx != NULL)
		found = ncm_context_enumerate(ctx, NULL, &error);
	if (found != NULL && found->len == 0)
		g_set_error_literal(&error, NCM_ERROR, NCM_ERROR_NOT_FOUND, "no NCM function found");
	if (found != NULL && found->len > 0)
		dev = ncm_device_open(ctx, g_ptr_array_index(found, 0), NULL, &error);
	if (dev == NULL) {
		fprintf(stderr, "ncm-frames: %s\n", error->message);
		return 1;
	}
	app.loop = g_main_loop_new(NULL, FALSE);
	g_signal_connect(dev, "removed", G_CALLBACK(on_removed), &app);
	ncm_device_set_sink(dev, &sink, &app);
	if (!ncm_device_start(dev, &error)) {
		fprintf(stderr, "ncm-frames: %s\n", error->message);
		return 1;
	}
	ncm_device_get_mac(dev, mac);
	printf("listening on %02x:%02x:%02x:%02x:%02x:%02x, MTU %u\n", mac[0], mac[1], mac[2],
	       mac[3], mac[4], mac[5], ncm_device_get_mtu(dev));
	fflush(stdout);
	g_main_loop_run(app.loop);
	/* After close no sink callback runs, so @app may go. */
	ncm_device_close(dev);
	g_main_loop_unref(app.loop);
	return 0;
}
