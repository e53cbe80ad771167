/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-server.c: the device side of ncm-bench: sink, source, echo and UDP modes on kernel sockets. */
#include <string.h>

#include "ncm-bench.h"
#include "ncm-bench-proto.h"
#include "ncm-bench-stats.h"

#define SERVER_BUF (256 * 1024)
/* A peer that stops reading must not pin a server thread forever. */
#define SERVER_IO_TIMEOUT_S 15

/* Frame reassembly state of a framed SINK. */
typedef struct {
	guint8 hdr[BENCH_FRAME_HDR];
	guint hdr_got;
	guint64 remaining;
	gint64 send_us;
	gint64 owd_min, owd_max;
	guint64 frames;
	gint64 last_rx;  /* the last arrival, 0 before the first */
	gint64 gap_max;  /* the longest time without arrivals since the last report */
} FrameState;

static void
frame_done(FrameState *f)
{
	gint64 owd = g_get_monotonic_time() - f->send_us;

	if (f->frames == 0 || owd < f->owd_min)
		f->owd_min = owd;
	if (f->frames == 0 || owd > f->owd_max)
		f->owd_max = owd;
	f->frames++;
}

static void
frame_feed(FrameState *f, const guint8 *p, gsize len)
{
	while (len > 0) {
		if (f->remaining == 0) {
			guint take = MIN((guint)len, BENCH_FRAME_HDR - f->hdr_got);
			guint32 flen = 0;

			memcpy(f->hdr + f->hdr_got, p, take);
			f->hdr_got += take;
			p += take;
			len -= take;
			if (f->hdr_got < BENCH_FRAME_HDR)
				continue;
			f->hdr_got = 0;
			if (!bench_frame_read(f->hdr, &flen, &f->send_us))
				continue; /* out of step: resynchronise on the next header */
			f->remaining = flen - BENCH_FRAME_HDR;
			if (f->remaining == 0)
				frame_done(f);
		} else {
			gsize take = (gsize)MIN((guint64)len, f->remaining);

			f->remaining -= take;
			p += take;
			len -= take;
			if (f->remaining == 0)
				frame_done(f);
		}
	}
}

static gboolean
sink_report(GSocket *sock, guint64 bytes, FrameState *f)
{
	gint64 now = g_get_monotonic_time();
	/* A gap still open counts too: a link that went silent shows before it recovers. */
	gint64 gap = MAX(f->gap_max, f->last_rx ? now - f->last_rx : 0);
	gboolean ok = bench_socket_send_line(sock, "S %" G_GINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT
				" %" G_GINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT "\n",
				now, bytes, f->owd_min, f->owd_max, f->frames, gap);

	f->frames = 0;
	f->owd_min = f->owd_max = 0;
	f->gap_max = 0;
	return ok;
}

static void
serve_sink(GSocket *sock, const char *cmd)
{
	gint64 secs = bench_cmd_param(cmd, "secs", 0), mark = bench_cmd_param(cmd, "mark", 0);
	gboolean framed = bench_cmd_param(cmd, "framed", 0) != 0;
	gint64 start = g_get_monotonic_time(), next = start + BENCH_REPORT_US;
	g_autofree guint8 *buf = g_malloc(SERVER_BUF);
	FrameState f = {0};
	guint64 bytes = 0, marks = 0;

	for (;;) {
		gint64 now = g_get_monotonic_time();
		gssize n;

		if (secs > 0 && now >= start + secs * G_USEC_PER_SEC)
			break;
		if (now >= next) {
			if (!sink_report(sock, bytes, &f))
				return;
			next += BENCH_REPORT_US;
			continue;
		}
		if (!g_socket_condition_timed_wait(sock, G_IO_IN, next - now, NULL, NULL))
			continue;
		n = g_socket_receive(sock, (gchar *)buf, SERVER_BUF, NULL, NULL);
		if (n <= 0)
			break;
		now = g_get_monotonic_time();
		if (f.last_rx)
			f.gap_max = MAX(f.gap_max, now - f.last_rx);
		f.last_rx = now;
		bytes += (guint64)n;
		if (framed)
			frame_feed(&f, buf, (gsize)n);
		if (mark > 0 && bytes / (guint64)mark > marks) {
			marks = bytes / (guint64)mark;
			if (!sink_report(sock, bytes, &f))
				return;
		}
	}
	sink_report(sock, bytes, &f);
	if (!bench_socket_send_line(sock, "E %" G_GINT64_FORMAT " %" G_GUINT64_FORMAT "\n", g_get_monotonic_time(), bytes))
		return;
	/*
	 * Closing with the client's data unread would send a reset, and a reset
	 * may overtake "E" in the client's stack: drain until the client closes.
	 */
	while (g_socket_receive(sock, (gchar *)buf, SERVER_BUF, NULL, NULL) > 0)
		;
}

static void
serve_source(GSocket *sock, const char *cmd)
{
	gint64 end = g_get_monotonic_time() + bench_cmd_param(cmd, "secs", 10) * G_USEC_PER_SEC;
	g_autofree guint8 *buf = g_malloc0(SERVER_BUF);

	while (g_get_monotonic_time() < end) {
		if (g_socket_send(sock, (const gchar *)buf, SERVER_BUF, NULL, NULL) <= 0)
			return;
	}
}

static void
serve_echo(GSocket *sock)
{
	g_autofree guint8 *buf = g_malloc(SERVER_BUF);
	gssize n;

	while ((n = g_socket_receive(sock, (gchar *)buf, SERVER_BUF, NULL, NULL)) > 0) {
		if (!bench_socket_send_all(sock, buf, (gsize)n, NULL))
			return;
	}
}

/* ---- UDP modes -------------------------------------------------------------- */

typedef struct {
	GSocket *ctl;
	GSocket *udp;
	gboolean reflect;
	BenchSeqTracker *streams; /* BENCH_MAX_STREAMS, receiver mode only */
	guint16 n_streams;
} UdpServer;

static void
udp_datagram(UdpServer *u, guint8 *buf, gssize n, GSocketAddress *from)
{
	BenchDgram d;

	if (!bench_dgram_read(buf, (gsize)n, &d))
		return;
	if (u->reflect) {
		d.server_us = g_get_monotonic_time();
		bench_dgram_write(buf, &d);
		g_socket_send_to(u->udp, from, (const gchar *)buf, (gsize)n, NULL, NULL);
		return;
	}
	if (d.stream >= BENCH_MAX_STREAMS)
		return;
	bench_seq_add(&u->streams[d.stream], d.seq);
	u->n_streams = MAX(u->n_streams, (guint16)(d.stream + 1));
}

static gboolean
udp_report(UdpServer *u)
{
	gint64 now = g_get_monotonic_time();

	for (guint16 s = 0; s < u->n_streams; s++) {
		const BenchSeqTracker *t = &u->streams[s];

		if (!bench_socket_send_line(u->ctl, "U %" G_GINT64_FORMAT " %u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
			       " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT "\n",
			       now, s, t->unique, t->duplicates, t->reordered, t->late,
			       t->started ? (gint64)t->highest : -1))
			return FALSE;
	}
	return TRUE;
}

/* Drains the UDP socket; FALSE when the control connection ended. */
static gboolean
udp_poll_once(UdpServer *u, guint8 *buf, gint64 timeout_us)
{
	GPollFD fds[2] = {
		{g_socket_get_fd(u->udp), G_IO_IN, 0},
		{g_socket_get_fd(u->ctl), G_IO_IN | G_IO_HUP | G_IO_ERR, 0},
	};

	if (g_poll(fds, 2, (gint)MAX(timeout_us / 1000, 1)) < 0)
		return TRUE;
	if (fds[1].revents) {
		char c;

		if (g_socket_receive(u->ctl, &c, 1, NULL, NULL) <= 0)
			return FALSE;
	}
	for (int i = 0; i < 256 && (fds[0].revents & G_IO_IN); i++) {
		GSocketAddress *from = NULL;
		gssize n = g_socket_receive_from(u->udp, &from, (gchar *)buf, 65536, NULL, NULL);

		if (n < 0)
			break;
		udp_datagram(u, buf, n, from);
		g_clear_object(&from);
	}
	return TRUE;
}

static void
serve_udp(GSocket *ctl, gboolean reflect)
{
	g_autoptr(GSocketAddress) local = g_socket_get_local_address(ctl, NULL);
	g_autofree guint8 *buf = g_malloc(65536);
	g_autoptr(GSocket) udp = NULL;
	g_autoptr(GSocketAddress) bound = NULL;
	UdpServer u = {ctl, NULL, reflect, NULL, 0};
	gint64 next = g_get_monotonic_time() + BENCH_REPORT_US;

	if (!local)
		return;
	udp = g_socket_new(g_socket_address_get_family(local), G_SOCKET_TYPE_DATAGRAM,
			   G_SOCKET_PROTOCOL_UDP, NULL);
	bound = G_SOCKET_ADDRESS(g_inet_socket_address_new(
		g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(local)), 0));
	if (!udp || !g_socket_bind(udp, bound, FALSE, NULL))
		return;
	g_clear_object(&bound);
	bound = g_socket_get_local_address(udp, NULL);
	g_socket_set_blocking(udp, FALSE);
	u.udp = udp;
	u.streams = g_new0(BenchSeqTracker, BENCH_MAX_STREAMS);
	if (bench_socket_send_line(ctl, "P %u\n", g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound)))) {
		for (;;) {
			gint64 now = g_get_monotonic_time();

			if (now >= next) {
				if (!reflect && !udp_report(&u))
					break;
				next += BENCH_REPORT_US;
			}
			if (!udp_poll_once(&u, buf, next - now))
				break;
		}
	}
	g_free(u.streams);
}

/* ---- Dispatch ---------------------------------------------------------------- */

static gboolean
on_connection(GThreadedSocketService *service, GSocketConnection *conn, GObject *source,
	      gpointer user_data)
{
	GSocket *sock = g_socket_connection_get_socket(conn);
	g_autofree char *cmd = bench_socket_read_line(sock, NULL);

	if (!cmd)
		return TRUE;
	g_socket_set_timeout(sock, SERVER_IO_TIMEOUT_S);
	if (g_str_has_prefix(cmd, "SINK"))
		serve_sink(sock, cmd);
	else if (g_str_has_prefix(cmd, "SOURCE"))
		serve_source(sock, cmd);
	else if (g_str_has_prefix(cmd, "ECHO"))
		serve_echo(sock);
	else if (g_str_has_prefix(cmd, "UDP_REFLECT"))
		serve_udp(sock, TRUE);
	else if (g_str_has_prefix(cmd, "UDP_RECV"))
		serve_udp(sock, FALSE);
	else if (g_str_has_prefix(cmd, "RAW_FLOOD"))
		bench_serve_raw_flood(sock, cmd);
	else if (g_str_has_prefix(cmd, "RAW_COUNT"))
		bench_serve_raw_count(sock, cmd);
	g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	return TRUE;
}

int
bench_server_run(const char *bind_address, guint16 port)
{
	g_autoptr(GSocketService) service = g_threaded_socket_service_new(64);
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	g_autoptr(GError) error = NULL;
	gboolean ok;

	if (bind_address) {
		g_autoptr(GSocketAddress) addr = g_inet_socket_address_new_from_string(bind_address, port);

		ok = addr && g_socket_listener_add_address(G_SOCKET_LISTENER(service), addr,
							    G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP,
							    NULL, NULL, &error);
	} else {
		ok = g_socket_listener_add_inet_port(G_SOCKET_LISTENER(service), port, NULL, &error);
	}
	if (!ok) {
		g_printerr("ncm-bench: cannot listen on port %u: %s\n", port,
			   error ? error->message : "bad address");
		return 2;
	}
	g_signal_connect(service, "run", G_CALLBACK(on_connection), NULL);
	g_printerr("ncm-bench: serving on port %u\n", port);
	g_main_loop_run(loop);
	return 0;
}
