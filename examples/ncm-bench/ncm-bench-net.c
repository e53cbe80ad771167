/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-net.c: ncm-bench's blocking socket and stream helpers, shared by client and server. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "ncm-bench.h"
#include "ncm-bench-proto.h"

gboolean
bench_socket_send_all(GSocket *sock, const void *buf, gsize len, GError **error)
{
	const gchar *p = buf;

	while (len > 0) {
		gssize n = g_socket_send(sock, p, len, NULL, error);

		if (n <= 0)
			return FALSE;
		p += n;
		len -= (gsize)n;
	}
	return TRUE;
}

gboolean
bench_socket_send_line(GSocket *sock, const char *fmt, ...)
{
	g_autofree char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	s = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return bench_socket_send_all(sock, s, strlen(s), NULL);
}

/* Byte by byte: the command line is short and must not eat the data after it. */
char *
bench_socket_read_line(GSocket *sock, GError **error)
{
	g_autoptr(GString) line = g_string_new(NULL);
	char c;

	while (line->len < 256) {
		gssize n = g_socket_receive(sock, &c, 1, NULL, error);

		if (n <= 0)
			return NULL;
		if (c == '\n')
			return g_string_free(g_steal_pointer(&line), FALSE);
		g_string_append_c(line, c);
	}
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "command line too long");
	return NULL;
}

GIOStream *
bench_open_command(BenchCtx *ctx, const char *cmd, GDataInputStream **ret_lines, GError **error)
{
	BenchTransport *t = ctx->transport;
	g_autoptr(GIOStream) io = t->ops->tcp_connect(t, error);
	g_autofree char *line = g_strconcat(cmd, "\n", NULL);
	GOutputStream *out;

	if (!io)
		return NULL;
	out = g_io_stream_get_output_stream(io);
	if (!g_output_stream_write_all(out, line, strlen(line), NULL, NULL, error))
		return NULL;
	if (ret_lines) {
		*ret_lines = g_data_input_stream_new(g_io_stream_get_input_stream(io));
		/* Reports are lines; the data stream's buffer must not swallow data
		 * meant for others, so only report-only streams read through it. */
		g_buffered_input_stream_set_buffer_size(G_BUFFERED_INPUT_STREAM(*ret_lines), 4096);
	}
	return g_steal_pointer(&io);
}

/*
 * A plain close leaves what the send buffer still holds to an orphan
 * socket, which keeps it, and its memory, until the peer acks it. When the
 * path goes away right after the run (ncm-tun's TAP removed, libncm's
 * device closed) that takes minutes of retries: in the VM's 1 GiB guest the
 * orphans of one boot's uploads reached tcp_mem's soft limit, and past it
 * no sender's buffer grew any more (session 17). The run's report is in
 * when this is called, so a reset loses nothing.
 */
void
bench_io_close_reset(GIOStream *io)
{
	if (G_IS_SOCKET_CONNECTION(io)) {
		GSocket *sock = g_socket_connection_get_socket(G_SOCKET_CONNECTION(io));
		struct linger now = {.l_onoff = 1, .l_linger = 0};

		if (setsockopt(g_socket_get_fd(sock), SOL_SOCKET, SO_LINGER, &now, sizeof now) != 0)
			g_debug("SO_LINGER: %s", g_strerror(errno));
	}
	g_io_stream_close(io, NULL, NULL);
}

GArray *
bench_series_rates(const GArray *samples, gint64 from_us, gint64 to_us)
{
	GArray *rates = g_array_new(FALSE, FALSE, sizeof(double));
	BenchWindows w;
	double *r = NULL;

	bench_windows((const BenchSample *)(const void *)samples->data, samples->len, from_us, to_us,
		      BENCH_REPORT_US, &w, &r);
	g_array_append_vals(rates, r, w.n_windows);
	g_free(r);
	return rates;
}

double
bench_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

guint64
bench_context_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (guint64)ru.ru_nvcsw + (guint64)ru.ru_nivcsw;
}
