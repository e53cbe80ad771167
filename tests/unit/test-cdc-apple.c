/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cdc-apple.c: unit tests for the Apple NCM mode-switch request sequence. */
#include "ncm-cdc.h"

#include <glib.h>
#include <string.h>

/* A fake device: records every setup, answers from a script. */
typedef struct {
	int rc;            /* what the transfer returns */
	uint8_t data[4];   /* bytes written into an IN data stage, rc of them */
} Step;

typedef struct {
	const Step *script;
	size_t n_script;
	NcmControlSetup seen[8];
	size_t n_seen;
} FakeDevice;

static int
fake_control(void *user_data, const NcmControlSetup *setup, uint8_t *data)
{
	FakeDevice *dev = user_data;
	const Step *step;

	g_assert_cmpuint(dev->n_seen, <, G_N_ELEMENTS(dev->seen));
	dev->seen[dev->n_seen++] = *setup;
	g_assert_cmpuint(dev->n_seen, <=, dev->n_script);
	step = &dev->script[dev->n_seen - 1];
	g_assert_nonnull(data);
	if (step->rc > 0) {
		g_assert_cmpint(step->rc, <=, setup->length);
		/* writing the full wLength lets ASan catch a buffer smaller than it */
		memset(data, 0xCC, setup->length);
		memcpy(data, step->data, (size_t)step->rc);
	}
	return step->rc;
}

static void
assert_setup(const NcmControlSetup *s, uint8_t type, uint8_t req, uint16_t value,
	     uint16_t index, uint16_t length)
{
	g_assert_cmphex(s->request_type, ==, type);
	g_assert_cmphex(s->request, ==, req);
	g_assert_cmpuint(s->value, ==, value);
	g_assert_cmpuint(s->index, ==, index);
	g_assert_cmpuint(s->length, ==, length);
}

static void
assert_get_mode(const NcmControlSetup *s)
{
	assert_setup(s, 0xC0, 0x45, 0, 0, 4);
}

static void
assert_set_mode_ncm(const NcmControlSetup *s)
{
	assert_setup(s, 0xC0, 0x52, 0, 3, 1);
}

static NcmAppleSwitchResult
run(FakeDevice *dev, const Step *script, size_t n, uint32_t *mode)
{
	memset(dev, 0, sizeof(*dev));
	dev->script = script;
	dev->n_script = n;
	*mode = 0xDEADBEEF;
	return ncm_apple_mode_switch(fake_control, dev, mode);
}

/* usbmuxd's trace shows 5:3:3:0 on a device already in the NCM mode. */
static void
test_already_ncm(void)
{
	static const Step script[] = { { 4, { 5, 3, 3, 0 } } };
	FakeDevice dev;
	uint32_t mode;

	g_assert_cmpint(run(&dev, script, 1, &mode), ==, NCM_APPLE_SWITCH_ALREADY);
	g_assert_cmpuint(dev.n_seen, ==, 1);
	assert_get_mode(&dev.seen[0]);
	g_assert_cmphex(mode, ==, 0x00030305);
}

static void
test_switch(void)
{
	static const Step script[] = { { 4, { 3, 3, 3, 0 } }, { 1, { 0 } } };
	FakeDevice dev;
	uint32_t mode;

	g_assert_cmpint(run(&dev, script, 2, &mode), ==, NCM_APPLE_SWITCH_REQUESTED);
	g_assert_cmpuint(dev.n_seen, ==, 2);
	assert_get_mode(&dev.seen[0]);
	assert_set_mode_ncm(&dev.seen[1]);
	g_assert_cmphex(mode, ==, 0x00030303);
}

/* A device that re-enumerates before the status stage still counts as asked. */
static void
test_switch_empty_reply(void)
{
	static const Step script[] = { { 4, { 1, 0, 0, 0 } }, { 0, { 0 } } };
	FakeDevice dev;
	uint32_t mode;

	g_assert_cmpint(run(&dev, script, 2, &mode), ==, NCM_APPLE_SWITCH_REQUESTED);
	g_assert_cmpuint(dev.n_seen, ==, 2);
	assert_set_mode_ncm(&dev.seen[1]);
	g_assert_cmphex(mode, ==, 1);
}

static void
test_read_fails(void)
{
	static const Step script[] = { { -9, { 0 } } };
	FakeDevice dev;
	uint32_t mode;

	g_assert_cmpint(run(&dev, script, 1, &mode), ==, NCM_APPLE_SWITCH_FAILED);
	g_assert_cmpuint(dev.n_seen, ==, 1);
	assert_get_mode(&dev.seen[0]);
	g_assert_cmphex(mode, ==, 0xDEADBEEF);
}

/* Three bytes starting with 5 must not pass for "already NCM". */
static void
test_short_read(void)
{
	static const Step script[] = { { 3, { 5, 3, 3, 0 } } };
	FakeDevice dev;
	uint32_t mode;

	g_assert_cmpint(run(&dev, script, 1, &mode), ==, NCM_APPLE_SWITCH_FAILED);
	g_assert_cmpuint(dev.n_seen, ==, 1);
	assert_get_mode(&dev.seen[0]);
	g_assert_cmphex(mode, ==, 0xDEADBEEF);
}

static void
test_set_fails(void)
{
	static const Step script[] = { { 4, { 3, 3, 3, 0 } }, { -4, { 0 } } };
	FakeDevice dev;
	uint32_t mode;

	g_assert_cmpint(run(&dev, script, 2, &mode), ==, NCM_APPLE_SWITCH_FAILED);
	g_assert_cmpuint(dev.n_seen, ==, 2);
	assert_get_mode(&dev.seen[0]);
	assert_set_mode_ncm(&dev.seen[1]);
	/* the mode was read before the failure */
	g_assert_cmphex(mode, ==, 0x00030303);
}

static void
test_null_arguments(void)
{
	static const Step script[] = { { 4, { 5, 3, 3, 0 } } };
	FakeDevice dev = { .script = script, .n_script = 1 };

	g_assert_cmpint(ncm_apple_mode_switch(NULL, &dev, NULL), ==, NCM_APPLE_SWITCH_FAILED);
	g_assert_cmpuint(dev.n_seen, ==, 0);
	g_assert_cmpint(ncm_apple_mode_switch(fake_control, &dev, NULL), ==,
			NCM_APPLE_SWITCH_ALREADY);
	g_assert_cmpuint(dev.n_seen, ==, 1);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/cdc-apple/already-ncm", test_already_ncm);
	g_test_add_func("/cdc-apple/switch", test_switch);
	g_test_add_func("/cdc-apple/switch-empty-reply", test_switch_empty_reply);
	g_test_add_func("/cdc-apple/read-fails", test_read_fails);
	g_test_add_func("/cdc-apple/short-read", test_short_read);
	g_test_add_func("/cdc-apple/set-fails", test_set_fails);
	g_test_add_func("/cdc-apple/null-arguments", test_null_arguments);
	return g_test_run();
}
