/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cdc-desc.c: unit tests for the NCM configuration descriptor walker. */
#include "ncm-cdc.h"

#include <glib.h>
#include <stdarg.h>
#include <string.h>

/*
 * Blobs are assembled here from the descriptor layouts (USB 2.0 ch. 9, CDC
 * 1.2, NCM 1.0), the way Linux's f_ncm gadget and Apple devices lay them out.
 * The same builders write the fuzz seeds, and a test checks the stored seeds
 * still match them.
 */

typedef struct {
	uint8_t b[2048];
	size_t len;
} Blob;

static void
put(Blob *bl, unsigned n, ...)
{
	va_list ap;

	g_assert_cmpuint(bl->len + n, <=, sizeof(bl->b));
	va_start(ap, n);
	for (unsigned i = 0; i < n; i++)
		bl->b[bl->len++] = (uint8_t)va_arg(ap, int);
	va_end(ap);
}

#define LO(v) ((v) & 0xff)
#define HI(v) (((v) >> 8) & 0xff)

static void
add_config(Blob *bl, uint8_t value)
{
	/* wTotalLength and bNumInterfaces are filled by finish() */
	put(bl, 9, 9, 0x02, 0, 0, 0, value, 0, 0x80, 250);
}

static void
add_iad(Blob *bl, uint8_t first, uint8_t count, uint8_t cls, uint8_t sub)
{
	put(bl, 8, 8, 0x0B, first, count, cls, sub, 0, 5);
}

static void
add_iface(Blob *bl, uint8_t num, uint8_t alt, uint8_t neps, uint8_t cls, uint8_t sub,
	  uint8_t proto)
{
	put(bl, 9, 9, 0x04, num, alt, neps, cls, sub, proto, 0);
}

static void
add_header(Blob *bl)
{
	put(bl, 5, 5, 0x24, 0x00, 0x10, 0x01);
}

static void
add_union(Blob *bl, uint8_t ctrl, uint8_t data)
{
	put(bl, 5, 5, 0x24, 0x06, ctrl, data);
}

static void
add_ether(Blob *bl, uint8_t imac, uint16_t mss)
{
	put(bl, 13, 13, 0x24, 0x0F, imac, 0, 0, 0, 0, LO(mss), HI(mss), 0, 0, 0);
}

static void
add_ncm(Blob *bl, uint8_t caps)
{
	put(bl, 6, 6, 0x24, 0x1A, 0x00, 0x01, caps);
}

static void
add_ep(Blob *bl, uint8_t addr, uint8_t attr, uint16_t mps, uint8_t interval)
{
	put(bl, 7, 7, 0x05, addr, attr, LO(mps), HI(mps), interval);
}

static void
add_ss_comp(Blob *bl, uint8_t burst, uint16_t bytes_per_interval)
{
	put(bl, 6, 6, 0x30, burst, 0, LO(bytes_per_interval), HI(bytes_per_interval));
}

/* Sets wTotalLength and counts interfaces at alt 0, as a device would. */
static void
finish(Blob *bl)
{
	uint8_t n_ifaces = 0;

	for (size_t off = 0; off + 1 < bl->len && bl->b[off] >= 2; off += bl->b[off])
		if (bl->b[off + 1] == 0x04 && bl->b[off] >= 9 && bl->b[off + 3] == 0)
			n_ifaces++;
	bl->b[2] = LO(bl->len);
	bl->b[3] = HI(bl->len);
	bl->b[4] = n_ifaces;
}

typedef struct {
	uint8_t comm;     /* first interface; data is comm + 1 */
	uint8_t ep_in;    /* bulk IN address */
	uint8_t ep_out;   /* bulk OUT address */
	uint8_t ep_intr;  /* interrupt IN address, 0 for none */
	bool superspeed;
	bool iad;
	bool union_desc;
} FnSpec;

static void
add_data_ifaces(Blob *bl, const FnSpec *s)
{
	uint16_t mps = s->superspeed ? 1024 : 512;

	add_iface(bl, s->comm + 1, 0, 0, 0x0A, 0x00, 0x01);
	add_iface(bl, s->comm + 1, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(bl, s->ep_in, 0x02, mps, 0);
	if (s->superspeed)
		add_ss_comp(bl, 0, 0);
	add_ep(bl, s->ep_out, 0x02, mps, 0);
	if (s->superspeed)
		add_ss_comp(bl, 0, 0);
}

/* One NCM function in f_ncm's order: IAD, comm + class descriptors + notify, data. */
static void
add_function(Blob *bl, const FnSpec *s)
{
	if (s->iad)
		add_iad(bl, s->comm, 2, 0x02, 0x0D);
	add_iface(bl, s->comm, 0, s->ep_intr ? 1 : 0, 0x02, 0x0D, 0x00);
	add_header(bl);
	if (s->union_desc)
		add_union(bl, s->comm, s->comm + 1);
	add_ether(bl, 4, 1514);
	add_ncm(bl, 0x11);
	if (s->ep_intr) {
		add_ep(bl, s->ep_intr, 0x03, 16, 9);
		if (s->superspeed)
			add_ss_comp(bl, 0, 16);
	}
	add_data_ifaces(bl, s);
}

static const FnSpec FNCM = {
	.comm = 0, .ep_in = 0x81, .ep_out = 0x02, .ep_intr = 0x83, .iad = true, .union_desc = true,
};

/* Apple's NCM functions: no IAD, no notification endpoint. */
static const FnSpec APPLE_NCM = {
	.comm = 2, .ep_in = 0x86, .ep_out = 0x05, .ep_intr = 0, .union_desc = true,
};

static void
add_usbmux(Blob *bl, uint8_t num)
{
	add_iface(bl, num, 0, 2, 0xFF, 0xFE, 0x02);
	add_ep(bl, 0x04, 0x02, 512, 0);
	add_ep(bl, 0x85, 0x02, 512, 0);
}

static void
build_fncm(Blob *bl, bool superspeed)
{
	FnSpec s = FNCM;

	s.superspeed = superspeed;
	memset(bl, 0, sizeof(*bl));
	add_config(bl, 1);
	add_function(bl, &s);
	finish(bl);
}

static void
build_apple(Blob *bl)
{
	memset(bl, 0, sizeof(*bl));
	add_config(bl, 5);
	add_iface(bl, 0, 0, 3, 0x06, 0x01, 0x01); /* PTP */
	add_ep(bl, 0x81, 0x02, 512, 0);
	add_ep(bl, 0x02, 0x02, 512, 0);
	add_ep(bl, 0x83, 0x03, 64, 9);
	add_usbmux(bl, 1);
	add_function(bl, &APPLE_NCM);
	finish(bl);
}

/* usbmux plus two NCM functions, the second (debug) one without notifications. */
static void
build_two_functions(Blob *bl)
{
	FnSpec first = { .comm = 1, .ep_in = 0x86, .ep_out = 0x05, .ep_intr = 0x87,
			 .union_desc = true };
	FnSpec second = { .comm = 3, .ep_in = 0x88, .ep_out = 0x06, .union_desc = true };

	memset(bl, 0, sizeof(*bl));
	add_config(bl, 6);
	add_usbmux(bl, 0);
	add_function(bl, &first);
	add_function(bl, &second);
	finish(bl);
}

static NcmCdcStatus
parse(const Blob *bl, NcmCdcFunction *fns, size_t max, size_t *n)
{
	*n = 99;
	if (fns)
		memset(fns, 0xEE, max * sizeof(*fns));
	return ncm_cdc_parse_config(bl->b, bl->len, fns, max, n);
}

static void
test_fncm_hs(void)
{
	NcmCdcFunction fn[2];
	Blob bl;
	size_t n;

	build_fncm(&bl, false);
	g_assert_cmpint(parse(&bl, fn, 2, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].config_value, ==, 1);
	g_assert_cmpuint(fn[0].comm_iface, ==, 0);
	g_assert_cmpuint(fn[0].comm_alt, ==, 0);
	g_assert_cmpuint(fn[0].data_iface, ==, 1);
	g_assert_cmpuint(fn[0].data_alt, ==, 1);
	g_assert_cmpuint(fn[0].intr_ep, ==, 0x83);
	g_assert_cmpuint(fn[0].intr_max_packet, ==, 16);
	g_assert_cmpuint(fn[0].bulk_in_ep, ==, 0x81);
	g_assert_cmpuint(fn[0].bulk_out_ep, ==, 0x02);
	g_assert_cmpuint(fn[0].bulk_in_max_packet, ==, 512);
	g_assert_cmpuint(fn[0].bulk_out_max_packet, ==, 512);
	g_assert_cmpuint(fn[0].mac_string_index, ==, 4);
	g_assert_cmpuint(fn[0].max_segment_size, ==, 1514);
	g_assert_cmpuint(fn[0].bcd_cdc, ==, 0x0110);
	g_assert_cmpuint(fn[0].bcd_ncm, ==, 0x0100);
	g_assert_cmpuint(fn[0].net_caps, ==, NCM_CAP_PACKET_FILTER | NCM_CAP_CRC_MODE);
	g_assert_true(fn[0].has_union);
	g_assert_false(fn[0].has_iad);
	g_assert_true(fn[0].has_ncm_desc);
}

static void
test_superspeed(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	build_fncm(&bl, true);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].bulk_in_max_packet, ==, 1024);
	g_assert_cmpuint(fn[0].bulk_out_max_packet, ==, 1024);
	g_assert_cmpuint(fn[0].intr_ep, ==, 0x83);
	g_assert_cmpuint(fn[0].intr_max_packet, ==, 16);
	g_assert_cmpuint(fn[0].data_alt, ==, 1);
}

/* wMaxPacketSize bits 11-12 multiply transactions; they are not size. */
static void
test_max_packet_mask(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	build_fncm(&bl, false);
	for (size_t off = 0; off < bl.len; off += bl.b[off])
		if (bl.b[off + 1] == 0x05 && bl.b[off + 2] == 0x83)
			bl.b[off + 5] |= 0x18;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].intr_max_packet, ==, 16);
}

static void
test_apple_no_interrupt(void)
{
	NcmCdcFunction fn[2];
	Blob bl;
	size_t n;

	build_apple(&bl);
	g_assert_cmpint(parse(&bl, fn, 2, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].config_value, ==, 5);
	g_assert_cmpuint(fn[0].comm_iface, ==, 2);
	g_assert_cmpuint(fn[0].data_iface, ==, 3);
	g_assert_cmpuint(fn[0].intr_ep, ==, 0);
	g_assert_cmpuint(fn[0].intr_max_packet, ==, 0);
	g_assert_cmpuint(fn[0].bulk_in_ep, ==, 0x86);
	g_assert_cmpuint(fn[0].bulk_out_ep, ==, 0x05);
}

static void
test_two_functions(void)
{
	NcmCdcFunction fn[4];
	Blob bl;
	size_t n;

	build_two_functions(&bl);
	g_assert_cmpint(parse(&bl, fn, 4, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 2);
	g_assert_cmpuint(fn[0].comm_iface, ==, 1);
	g_assert_cmpuint(fn[0].data_iface, ==, 2);
	g_assert_cmpuint(fn[0].intr_ep, ==, 0x87);
	g_assert_cmpuint(fn[0].bulk_in_ep, ==, 0x86);
	g_assert_cmpuint(fn[1].comm_iface, ==, 3);
	g_assert_cmpuint(fn[1].data_iface, ==, 4);
	g_assert_cmpuint(fn[1].intr_ep, ==, 0);
	g_assert_cmpuint(fn[1].bulk_in_ep, ==, 0x88);
	g_assert_cmpuint(fn[1].bulk_out_ep, ==, 0x06);
	g_assert_cmpuint(fn[1].config_value, ==, 6);
}

static void
test_too_many(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	build_two_functions(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_TOO_MANY);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].comm_iface, ==, 1);
	g_assert_cmpint(parse(&bl, NULL, 0, &n), ==, NCM_CDC_ERR_TOO_MANY);
	g_assert_cmpuint(n, ==, 0);
	/* exactly full is not too many */
	build_apple(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
}

static void
test_config_value(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 2);
	add_function(&bl, &FNCM);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].config_value, ==, 2);
}

static void
test_iad_fallback(void)
{
	FnSpec s = FNCM;
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	s.union_desc = false;
	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_function(&bl, &s);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_false(fn[0].has_union);
	g_assert_true(fn[0].has_iad);
	g_assert_cmpuint(fn[0].data_iface, ==, 1);

	/* an IAD of one interface cannot hold the data interface */
	bl.b[9 + 3] = 1;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);

	/* nor can one of another function class */
	bl.b[9 + 3] = 2;
	bl.b[9 + 5] = 0x06;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

static void
test_no_union_no_iad(void)
{
	FnSpec s = FNCM;
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	s.union_desc = false;
	s.iad = false;
	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_function(&bl, &s);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

/* A Union whose control interface is another one is ignored; the IAD decides. */
static void
test_union_foreign_control(void)
{
	FnSpec s = FNCM;
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	s.union_desc = false;
	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iad(&bl, 0, 2, 0x02, 0x0D);
	add_iface(&bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	add_union(&bl, 7, 1);
	s.iad = false;
	add_data_ifaces(&bl, &s);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_true(fn[0].has_iad);
	g_assert_false(fn[0].has_union);
}

static void
build_union_to(Blob *bl, uint8_t data)
{
	FnSpec s = FNCM;

	s.union_desc = false;
	s.iad = false;
	memset(bl, 0, sizeof(*bl));
	add_config(bl, 1);
	add_iface(bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	add_union(bl, 0, data);
	add_data_ifaces(bl, &s);
	finish(bl);
}

static void
test_union_missing_iface(void)
{
	static const uint8_t targets[] = { 9, 0, 255 };
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	build_union_to(&bl, 1);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	/* missing, the comm interface itself, out of any real range */
	for (size_t i = 0; i < G_N_ELEMENTS(targets); i++) {
		build_union_to(&bl, targets[i]);
		g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
		g_assert_cmpuint(n, ==, 0);
	}
}

/* A Union naming its own interface, even one with a data alt setting. */
static void
test_union_self(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iface(&bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	add_union(&bl, 0, 0);
	add_iface(&bl, 0, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x81, 0x02, 512, 0);
	add_ep(&bl, 0x02, 0x02, 512, 0);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

/* Descriptors after an IAD belong to no interface until the next one starts. */
static void
test_iad_ends_interface(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iface(&bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	add_header(&bl);
	add_iad(&bl, 1, 1, 0x0A, 0x00);
	add_union(&bl, 0, 1);
	add_ep(&bl, 0x83, 0x03, 16, 9);
	add_iface(&bl, 1, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x81, 0x02, 512, 0);
	add_ep(&bl, 0x02, 0x02, 512, 0);
	add_iad(&bl, 5, 2, 0x02, 0x0D);
	add_ep(&bl, 0x84, 0x02, 512, 0);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);

	/* the same without the IAD in the way is a function */
	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iface(&bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	add_header(&bl);
	add_union(&bl, 0, 1);
	add_ep(&bl, 0x83, 0x03, 16, 9);
	add_iface(&bl, 1, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x81, 0x02, 512, 0);
	add_ep(&bl, 0x02, 0x02, 512, 0);
	add_iad(&bl, 5, 2, 0x02, 0x0D);
	add_ep(&bl, 0x84, 0x02, 512, 0);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].intr_ep, ==, 0x83);
	g_assert_cmpuint(fn[0].bulk_in_ep, ==, 0x81);
}

static void
test_iad_last_interface(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iad(&bl, 255, 2, 0x02, 0x0D);
	add_iface(&bl, 255, 0, 0, 0x02, 0x0D, 0x00);
	add_iface(&bl, 0, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x81, 0x02, 512, 0);
	add_ep(&bl, 0x02, 0x02, 512, 0);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

static void
test_wrong_comm_subclass(void)
{
	FnSpec s = FNCM;
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_function(&bl, &s);
	finish(&bl);
	/* turn the comm interface (after config + IAD) into ECM */
	g_assert_cmpuint(bl.b[17 + 1], ==, 0x04);
	bl.b[17 + 6] = 0x06;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

static void
test_data_wrong_class(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;
	int changed = 0;

	build_fncm(&bl, false);
	for (size_t off = 0; off < bl.len; off += bl.b[off]) {
		if (bl.b[off + 1] == 0x04 && bl.b[off + 2] == 1) {
			bl.b[off + 5] = 0xFF;
			changed++;
		}
	}
	g_assert_cmpint(changed, ==, 2);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

/* The alt with exactly one bulk IN and one bulk OUT wins, wherever it is. */
static void
test_data_alt_choice(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iface(&bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	add_union(&bl, 0, 1);
	add_iface(&bl, 1, 0, 0, 0x0A, 0x00, 0x01);
	add_iface(&bl, 1, 1, 3, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x81, 0x02, 512, 0);
	add_ep(&bl, 0x82, 0x02, 512, 0);
	add_ep(&bl, 0x03, 0x02, 512, 0);
	add_iface(&bl, 1, 2, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x84, 0x02, 64, 0);
	add_ep(&bl, 0x05, 0x02, 64, 0);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].data_alt, ==, 2);
	g_assert_cmpuint(fn[0].bulk_in_ep, ==, 0x84);
	g_assert_cmpuint(fn[0].bulk_out_ep, ==, 0x05);
	g_assert_cmpuint(fn[0].bulk_in_max_packet, ==, 64);
}

static void
test_no_bulk_pair(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iface(&bl, 0, 0, 1, 0x02, 0x0D, 0x00);
	add_union(&bl, 0, 1);
	add_ep(&bl, 0x83, 0x03, 16, 9);
	add_iface(&bl, 1, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x81, 0x02, 512, 0);
	add_ep(&bl, 0x02, 0x03, 512, 0); /* interrupt OUT, not bulk */
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

static void
test_header_errors(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	build_fncm(&bl, false);
	n = 99;
	g_assert_cmpint(ncm_cdc_parse_config(bl.b, 8, fn, 1, &n), ==, NCM_CDC_ERR_TRUNCATED);
	g_assert_cmpuint(n, ==, 0);
	g_assert_cmpint(ncm_cdc_parse_config(NULL, 0, fn, 1, &n), ==, NCM_CDC_ERR_TRUNCATED);
	/* a device descriptor where the configuration should be */
	bl.b[1] = 0x01;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_NOT_CONFIG);
	g_assert_cmpuint(n, ==, 0);
	bl.b[1] = 0x02;
	bl.b[0] = 5;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_BAD_LENGTH);
	g_assert_cmpuint(n, ==, 0);
	bl.b[0] = 0;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_BAD_LENGTH);
	g_assert_cmpuint(n, ==, 0);
	/* ret_n_found is optional */
	build_fncm(&bl, false);
	g_assert_cmpint(ncm_cdc_parse_config(bl.b, bl.len, fn, 1, NULL), ==, NCM_CDC_OK);
}

/* A zero bLength would loop forever without a guard; what came before stays. */
static void
test_zero_length_guard(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n, full;

	build_fncm(&bl, false);
	full = bl.len;
	put(&bl, 4, 0, 0x24, 0, 0);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_BAD_LENGTH);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].bulk_out_ep, ==, 0x02);

	/* inside the function, it is lost */
	build_fncm(&bl, false);
	bl.b[full - 7] = 0;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_BAD_LENGTH);
	g_assert_cmpuint(n, ==, 0);
	bl.b[full - 7] = 1;
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_BAD_LENGTH);
	g_assert_cmpuint(n, ==, 0);

	/* a lone trailing byte cannot even hold bDescriptorType */
	build_fncm(&bl, false);
	put(&bl, 1, 1);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_ERR_BAD_LENGTH);
	g_assert_cmpuint(n, ==, 1);
}

static void
test_length_past_end(void)
{
	NcmCdcFunction fn[2];
	Blob bl;
	size_t n;

	build_two_functions(&bl);
	/* the last endpoint claims more than is left */
	bl.b[bl.len - 7] = 40;
	g_assert_cmpint(parse(&bl, fn, 2, &n), ==, NCM_CDC_ERR_BAD_LENGTH);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].comm_iface, ==, 1);
}

static bool
is_boundary(const Blob *bl, size_t at)
{
	size_t off = 0;

	while (off < at)
		off += bl->b[off];
	return off == at;
}

/* Every cut, inside a field or between descriptors, ends cleanly. */
static void
test_every_truncation(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	build_fncm(&bl, true);
	for (size_t cut = 9; cut < bl.len; cut++) {
		NcmCdcStatus st = ncm_cdc_parse_config(bl.b, cut, fn, 1, &n);

		g_assert_cmpint(st, ==, is_boundary(&bl, cut) ? NCM_CDC_OK : NCM_CDC_ERR_BAD_LENGTH);
		/* the last descriptor is an SS companion: the function is done before it */
		g_assert_cmpuint(n, ==, cut >= bl.len - 6 ? 1 : 0);
	}
}

static void
test_total_length(void)
{
	NcmCdcFunction fn[2];
	Blob bl;
	size_t n, first_end;

	build_two_functions(&bl);
	/* a blob cut where the second function starts */
	first_end = 0;
	for (size_t off = 0; off < bl.len; off += bl.b[off])
		if (bl.b[off + 1] == 0x04 && bl.b[off + 2] == 3)
			first_end = first_end ? first_end : off;
	g_assert_cmpuint(first_end, >, 0);
	bl.b[2] = LO(first_end);
	bl.b[3] = HI(first_end);
	g_assert_cmpint(parse(&bl, fn, 2, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	/* below the configuration descriptor itself: nothing but it is read */
	bl.b[2] = 3;
	bl.b[3] = 0;
	g_assert_cmpint(parse(&bl, fn, 2, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
	/* more than arrived: what arrived is walked */
	bl.b[2] = 0xFF;
	bl.b[3] = 0xFF;
	g_assert_cmpint(parse(&bl, fn, 2, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 2);
}

static void
test_short_class_descriptors(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_iad(&bl, 0, 2, 0x02, 0x0D);
	add_iface(&bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	put(&bl, 4, 4, 0x24, 0x00, 0x10);          /* Header cut in bcdCDC */
	put(&bl, 4, 4, 0x24, 0x06, 0);             /* Union without its subordinate */
	put(&bl, 10, 10, 0x24, 0x0F, 4, 0, 0, 0, 0, 0xEA, 0x05); /* Ethernet cut */
	put(&bl, 5, 5, 0x24, 0x1A, 0x00, 0x01);    /* NCM without capabilities */
	put(&bl, 2, 2, 0x24);                      /* no subtype at all */
	put(&bl, 6, 6, 0x05, 0x83, 0x03, 16, 0);   /* endpoint without bInterval */
	add_data_ifaces(&bl, &FNCM);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_true(fn[0].has_iad);
	g_assert_false(fn[0].has_union);
	g_assert_false(fn[0].has_ncm_desc);
	g_assert_cmpuint(fn[0].bcd_cdc, ==, 0);
	g_assert_cmpuint(fn[0].mac_string_index, ==, 0);
	g_assert_cmpuint(fn[0].max_segment_size, ==, 0);
	g_assert_cmpuint(fn[0].intr_ep, ==, 0);
}

/* Class descriptors before any interface belong to none; endpoints may come first. */
static void
test_odd_order(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_union(&bl, 0, 1);
	add_ncm(&bl, 0x3F);
	add_iad(&bl, 0, 2, 0x02, 0x0D);
	add_iface(&bl, 0, 0, 1, 0x02, 0x0D, 0x00);
	add_ep(&bl, 0x83, 0x03, 16, 9);
	add_ether(&bl, 7, 1500);
	add_header(&bl);
	add_iface(&bl, 1, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x02, 0x02, 512, 0);
	add_header(&bl);
	add_ep(&bl, 0x81, 0x02, 512, 0);
	add_iface(&bl, 1, 0, 0, 0x0A, 0x00, 0x01);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_true(fn[0].has_iad);
	g_assert_false(fn[0].has_ncm_desc);
	g_assert_cmpuint(fn[0].intr_ep, ==, 0x83);
	g_assert_cmpuint(fn[0].mac_string_index, ==, 7);
	g_assert_cmpuint(fn[0].max_segment_size, ==, 1500);
	g_assert_cmpuint(fn[0].bcd_cdc, ==, 0x0110);
	g_assert_cmpuint(fn[0].bulk_in_ep, ==, 0x81);
	g_assert_cmpuint(fn[0].bulk_out_ep, ==, 0x02);
}

static void
test_duplicate_interfaces(void)
{
	NcmCdcFunction fn[4];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_function(&bl, &FNCM);
	add_function(&bl, &FNCM);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 4, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);

	/* a second comm interface claiming the first one's data interface */
	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_function(&bl, &FNCM);
	add_iface(&bl, 5, 0, 0, 0x02, 0x0D, 0x00);
	add_union(&bl, 5, 1);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 4, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].comm_iface, ==, 0);

	/* the first comm interface again, now with a data interface of its own */
	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	add_function(&bl, &FNCM);
	add_iface(&bl, 0, 0, 0, 0x02, 0x0D, 0x00);
	add_union(&bl, 0, 2);
	add_iface(&bl, 2, 1, 2, 0x0A, 0x00, 0x01);
	add_ep(&bl, 0x84, 0x02, 512, 0);
	add_ep(&bl, 0x05, 0x02, 512, 0);
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 4, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(fn[0].data_iface, ==, 1);
}

/* An interface descriptor too short to hold its fields starts nothing. */
static void
test_short_interface(void)
{
	NcmCdcFunction fn[1];
	Blob bl;
	size_t n;

	build_fncm(&bl, false);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 1);
	/* drop the comm interface's iInterface: config 9 + IAD 8, then 9 bytes */
	memmove(bl.b + 17 + 8, bl.b + 17 + 9, bl.len - 17 - 9);
	bl.len--;
	bl.b[17] = 8;
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 1, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

/* Many comm interfaces (a hostile device) are bounded, never a crash. */
static void
test_many_comm_interfaces(void)
{
	NcmCdcFunction fn[4];
	Blob bl;
	size_t n;

	memset(&bl, 0, sizeof(bl));
	add_config(&bl, 1);
	for (unsigned i = 0; i < 150; i++)
		add_iface(&bl, (uint8_t)i, 0, 0, 0x02, 0x0D, 0x00);
	add_function(&bl, &(FnSpec){ .comm = 200, .ep_in = 0x81, .ep_out = 0x01,
				      .union_desc = true });
	finish(&bl);
	g_assert_cmpint(parse(&bl, fn, 4, &n), ==, NCM_CDC_OK);
	g_assert_cmpuint(n, ==, 0);
}

static void
test_status_names(void)
{
	const char *seen[5];

	for (int s = NCM_CDC_OK; s <= NCM_CDC_ERR_TOO_MANY; s++) {
		seen[s] = ncm_cdc_status_name((NcmCdcStatus)s);
		g_assert_nonnull(seen[s]);
		g_assert_cmpstr(seen[s], !=, "unknown");
		for (int t = 0; t < s; t++)
			g_assert_cmpstr(seen[s], !=, seen[t]);
	}
	g_assert_cmpstr(ncm_cdc_status_name(NCM_CDC_OK), ==, "ok");
	g_assert_cmpstr(ncm_cdc_status_name((NcmCdcStatus)77), ==, "unknown");
}

static void
mac_desc(uint8_t *d, const char *digits)
{
	size_t n = strlen(digits);

	d[0] = (uint8_t)(2 + 2 * n);
	d[1] = 0x03;
	for (size_t i = 0; i < n; i++) {
		d[2 + 2 * i] = (uint8_t)digits[i];
		d[3 + 2 * i] = 0;
	}
}

static void
test_mac_string(void)
{
	static const uint8_t want[6] = { 0x0A, 0x1B, 0x2C, 0x3D, 0x4E, 0x5F };
	uint8_t d[64], mac[6];

	mac_desc(d, "0A1B2C3D4E5F");
	g_assert_true(ncm_cdc_parse_mac_string(d, 26, mac));
	g_assert_cmpmem(mac, 6, want, 6);
	memset(mac, 0, sizeof(mac));
	mac_desc(d, "0a1b2c3d4e5f");
	g_assert_true(ncm_cdc_parse_mac_string(d, 26, mac));
	g_assert_cmpmem(mac, 6, want, 6);
	mac_desc(d, "fedcba987654");
	g_assert_true(ncm_cdc_parse_mac_string(d, 26, mac));
	g_assert_cmpuint(mac[0], ==, 0xFE);
	g_assert_cmpuint(mac[5], ==, 0x54);
	/* Padded with U+0000 after the 12 digits (bLength 30): accepted. */
	memset(mac, 0, sizeof(mac));
	mac_desc(d, "0A1B2C3D4E5F");
	memset(d + 26, 0, 4);
	d[0] = 30;
	g_assert_true(ncm_cdc_parse_mac_string(d, 30, mac));
	g_assert_cmpmem(mac, 6, want, 6);
}

static void
test_mac_string_rejects(void)
{
	uint8_t d[64], mac[6] = { 1, 2, 3, 4, 5, 6 };
	static const uint8_t untouched[6] = { 1, 2, 3, 4, 5, 6 };

	mac_desc(d, "0A1B2C3D4E5F");
	g_assert_false(ncm_cdc_parse_mac_string(d, 25, mac));    /* len != bLength */
	g_assert_false(ncm_cdc_parse_mac_string(d, 28, mac));
	d[0] = 24;
	g_assert_false(ncm_cdc_parse_mac_string(d, 26, mac));    /* bLength != len */
	d[0] = 26;
	d[1] = 0x24;
	g_assert_false(ncm_cdc_parse_mac_string(d, 26, mac));    /* not a string */
	mac_desc(d, "0A1B2C3D4E5G");
	g_assert_false(ncm_cdc_parse_mac_string(d, 26, mac));    /* not hex */
	mac_desc(d, "0A1B2C3D4E5");
	g_assert_false(ncm_cdc_parse_mac_string(d, 24, mac));    /* 11 digits */
	mac_desc(d, "0A1B2C3D4E5F0");
	g_assert_false(ncm_cdc_parse_mac_string(d, 28, mac));    /* 13 digits */
	mac_desc(d, "0A1B2C3D4E5F");
	memset(d + 26, 0, 4);
	d[0] = 30;
	d[28] = 'x';
	g_assert_false(ncm_cdc_parse_mac_string(d, 30, mac));    /* a character after the NUL */
	d[28] = 0;
	d[0] = 29;
	g_assert_false(ncm_cdc_parse_mac_string(d, 29, mac));    /* half a character */
	mac_desc(d, "0A1B2C3D4E5F");
	d[5] = 0x01;
	g_assert_false(ncm_cdc_parse_mac_string(d, 26, mac));    /* U+0141, not '1' */
	mac_desc(d, "0A1B2C3D4E5F");
	g_assert_false(ncm_cdc_parse_mac_string(NULL, 26, mac));
	g_assert_false(ncm_cdc_parse_mac_string(d, 26, NULL));
	g_assert_cmpmem(mac, 6, untouched, 6);
}

/* ---- seed corpus ---------------------------------------------------- */

typedef struct {
	const char *name;
	void (*build)(Blob *bl);
	size_t n_functions;
} Seed;

static void
seed_fncm_hs(Blob *bl)
{
	build_fncm(bl, false);
}

static void
seed_fncm_ss(Blob *bl)
{
	build_fncm(bl, true);
}

static void
seed_fncm_iad_only(Blob *bl)
{
	FnSpec s = FNCM;

	s.union_desc = false;
	memset(bl, 0, sizeof(*bl));
	add_config(bl, 2);
	add_function(bl, &s);
	finish(bl);
}

static const Seed seeds[] = {
	{ "fncm-hs.bin", seed_fncm_hs, 1 },
	{ "fncm-ss.bin", seed_fncm_ss, 1 },
	{ "fncm-iad-only-config2.bin", seed_fncm_iad_only, 1 },
	{ "apple-ncm-no-interrupt.bin", build_apple, 1 },
	{ "ipad-two-functions.bin", build_two_functions, 2 },
};

/* The stored seeds are these builders' output and parse as expected. */
static void
test_seed_corpus(void)
{
	const char *srcdir = g_getenv("G_TEST_SRCDIR");

	if (!srcdir) {
		g_test_skip("G_TEST_SRCDIR not set");
		return;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(seeds); i++) {
		g_autofree char *path = g_build_filename(srcdir, "..", "fuzz", "corpus", "cdc-desc",
							 seeds[i].name, NULL);
		g_autofree char *data = NULL;
		NcmCdcFunction fn[4];
		size_t len, n;
		Blob bl;

		g_assert_true(g_file_get_contents(path, &data, &len, NULL));
		seeds[i].build(&bl);
		g_assert_cmpmem(data, len, bl.b, bl.len);
		g_assert_cmpint(ncm_cdc_parse_config((const uint8_t *)data, len, fn, 4, &n), ==,
				NCM_CDC_OK);
		g_assert_cmpuint(n, ==, seeds[i].n_functions);
	}
}

static int
write_seeds(const char *dir)
{
	for (size_t i = 0; i < G_N_ELEMENTS(seeds); i++) {
		g_autofree char *path = g_build_filename(dir, seeds[i].name, NULL);
		g_autoptr(GError) error = NULL;
		Blob bl;

		seeds[i].build(&bl);
		if (!g_file_set_contents(path, (const char *)bl.b, (gssize)bl.len, &error)) {
			g_printerr("%s\n", error->message);
			return 1;
		}
	}
	return 0;
}

/* Issue 16: a missing, zero or multicast iMACAddress must not become the
 * host interface's MAC; the replacement is unicast and locally administered. */
static void
test_mac_usable(void)
{
	const uint8_t good[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x02 };
	const uint8_t oui[6] = { 0x00, 0x1b, 0x21, 0x01, 0x02, 0x03 };
	const uint8_t zero[6] = { 0 };
	const uint8_t multicast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t mac[6];

	g_assert_true(ncm_cdc_mac_usable(good));
	g_assert_true(ncm_cdc_mac_usable(oui));
	g_assert_false(ncm_cdc_mac_usable(zero));
	g_assert_false(ncm_cdc_mac_usable(multicast));
	g_assert_false(ncm_cdc_mac_usable(bcast));
	for (unsigned b = 0; b < 256; b++) {
		memset(mac, (int)b, sizeof(mac));
		ncm_cdc_mac_make_local(mac);
		g_assert_cmphex(mac[0] & 0x03, ==, 0x02);
		g_assert_cmphex(mac[0] & 0xfc, ==, b & 0xfc);
		for (unsigned i = 1; i < 6; i++)
			g_assert_cmphex(mac[i], ==, b);
		g_assert_true(ncm_cdc_mac_usable(mac));
	}
}

int
main(int argc, char **argv)
{
	/* maintainers regenerate tests/fuzz/corpus/cdc-desc with --write-seeds DIR */
	if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
		return write_seeds(argv[2]);

	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/cdc-desc/fncm-hs", test_fncm_hs);
	g_test_add_func("/cdc-desc/superspeed-companions", test_superspeed);
	g_test_add_func("/cdc-desc/max-packet-mask", test_max_packet_mask);
	g_test_add_func("/cdc-desc/apple-no-interrupt", test_apple_no_interrupt);
	g_test_add_func("/cdc-desc/two-functions", test_two_functions);
	g_test_add_func("/cdc-desc/too-many", test_too_many);
	g_test_add_func("/cdc-desc/config-value", test_config_value);
	g_test_add_func("/cdc-desc/iad-fallback", test_iad_fallback);
	g_test_add_func("/cdc-desc/no-union-no-iad", test_no_union_no_iad);
	g_test_add_func("/cdc-desc/union-foreign-control", test_union_foreign_control);
	g_test_add_func("/cdc-desc/union-missing-iface", test_union_missing_iface);
	g_test_add_func("/cdc-desc/union-self", test_union_self);
	g_test_add_func("/cdc-desc/iad-ends-interface", test_iad_ends_interface);
	g_test_add_func("/cdc-desc/iad-last-interface", test_iad_last_interface);
	g_test_add_func("/cdc-desc/wrong-comm-subclass", test_wrong_comm_subclass);
	g_test_add_func("/cdc-desc/data-wrong-class", test_data_wrong_class);
	g_test_add_func("/cdc-desc/data-alt-choice", test_data_alt_choice);
	g_test_add_func("/cdc-desc/no-bulk-pair", test_no_bulk_pair);
	g_test_add_func("/cdc-desc/header-errors", test_header_errors);
	g_test_add_func("/cdc-desc/zero-length-guard", test_zero_length_guard);
	g_test_add_func("/cdc-desc/length-past-end", test_length_past_end);
	g_test_add_func("/cdc-desc/every-truncation", test_every_truncation);
	g_test_add_func("/cdc-desc/total-length", test_total_length);
	g_test_add_func("/cdc-desc/short-class-descriptors", test_short_class_descriptors);
	g_test_add_func("/cdc-desc/odd-order", test_odd_order);
	g_test_add_func("/cdc-desc/duplicate-interfaces", test_duplicate_interfaces);
	g_test_add_func("/cdc-desc/short-interface", test_short_interface);
	g_test_add_func("/cdc-desc/many-comm-interfaces", test_many_comm_interfaces);
	g_test_add_func("/cdc-desc/status-names", test_status_names);
	g_test_add_func("/cdc-desc/mac-string", test_mac_string);
	g_test_add_func("/cdc-desc/mac-string-rejects", test_mac_string_rejects);
	g_test_add_func("/cdc-desc/seed-corpus", test_seed_corpus);
	g_test_add_func("/cdc-desc/mac-usable", test_mac_usable);
	return g_test_run();
}
