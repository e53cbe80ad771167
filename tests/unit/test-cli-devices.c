/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cli-devices.c: --device given several times: which selectors combine into one device and which start the next (ncm-cli, issue 20); which errors --persist waits out. */
#include <string.h>

#include "ncm-cli.h"

/* Parses @args (NULL-terminated) as the device options; the matches, or NULL with @error. */
static GArray *
parse_opts(const gchar *const *args, NcmDeviceOptions *ret_options, GError **error)
{
	g_autoptr(GOptionContext) oc = g_option_context_new(NULL);
	g_auto(GStrv) argv = NULL;
	gint argc = (gint)g_strv_length((gchar **)args) + 1;
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();
	gchar **av;

	g_strv_builder_add(b, "prog");
	g_strv_builder_addv(b, (const char **)args);
	argv = g_strv_builder_end(b);
	/* Parsing takes the options out of the array it is given: a shallow copy, so argv frees them all. */
	av = g_newa(gchar *, (gsize)argc + 1);
	memcpy(av, argv, ((gsize)argc + 1) * sizeof(gchar *));
	g_option_context_add_main_entries(oc, cli_device_entries(), NULL);
	g_assert_true(g_option_context_parse(oc, &argc, &av, NULL));
	return cli_device_parse_many(ret_options, error);
}

static GArray *
parse(const gchar *const *args, GError **error)
{
	NcmDeviceOptions options;

	return parse_opts(args, &options, error);
}

static void
test_one_zero(void)
{
	const gchar *args[] = { "--pace", "1M", NULL };
	g_autoptr(GArray) m = parse(args, NULL);
	NcmMatch zero = { 0 };

	g_assert_nonnull(m);
	g_assert_cmpuint(m->len, ==, 1);
	g_assert_cmpmem(&g_array_index(m, NcmMatch, 0), sizeof(NcmMatch), &zero, sizeof(zero));
}

static void
test_kinds_combine(void)
{
	const gchar *args[] = { "-d", "0525:a4a1", "-d", "serial=A", "-d", "mac=02:00:00:00:00:01", NULL };
	g_autoptr(GArray) m = parse(args, NULL);
	const NcmMatch *a;

	g_assert_nonnull(m);
	g_assert_cmpuint(m->len, ==, 1);
	a = &g_array_index(m, NcmMatch, 0);
	g_assert_cmphex(a->vid, ==, 0x0525);
	g_assert_cmphex(a->pid, ==, 0xa4a1);
	g_assert_cmpstr(a->serial, ==, "A");
	g_assert_true(a->have_mac);
}

static void
test_kind_again_splits(void)
{
	const gchar *args[] = { "-d", "0525:a4a1", "-d", "serial=A", "-d", "serial=B",
				"-d", "path=1-2", "-d", "path=3-1", NULL };
	g_autoptr(GArray) m = parse(args, NULL);
	const NcmMatch *a, *b, *c;

	g_assert_nonnull(m);
	g_assert_cmpuint(m->len, ==, 3);
	a = &g_array_index(m, NcmMatch, 0);
	b = &g_array_index(m, NcmMatch, 1);
	c = &g_array_index(m, NcmMatch, 2);
	g_assert_cmphex(a->vid, ==, 0x0525);
	g_assert_cmpstr(a->serial, ==, "A");
	g_assert_null(a->port_path);
	/* The second device has only what was given after its first selector. */
	g_assert_cmphex(b->vid, ==, 0);
	g_assert_cmpstr(b->serial, ==, "B");
	g_assert_cmpstr(b->port_path, ==, "1-2");
	g_assert_null(c->serial);
	g_assert_cmpstr(c->port_path, ==, "3-1");
}

static void
test_bad_selector(void)
{
	const gchar *args[] = { "-d", "serial=A", "-d", "bogus", NULL };
	g_autoptr(GError) error = NULL;
	g_autoptr(GArray) m = parse(args, &error);

	g_assert_null(m);
	g_assert_error(error, NCM_ERROR, NCM_ERROR_FAILED);
	g_assert_nonnull(strstr(error->message, "bogus"));
}

/* ncm-proxy's entry point takes one device and says what went wrong. */
static void
test_single_refuses_two(void)
{
	const gchar *args[] = { "-d", "serial=A", "-d", "serial=B", NULL };
	g_autoptr(GArray) m = parse(args, NULL);
	g_autoptr(GError) error = NULL;
	NcmMatch match = { 0 };
	NcmDeviceOptions options;

	g_assert_cmpuint(m->len, ==, 2);
	g_assert_false(cli_device_parse(&match, &options, &error));
	g_assert_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
	g_assert_nonnull(strstr(error->message, "one function only"));
}

/* An iPhone's NCM sits in a configuration of its own: leave to switch is asked for, never
 * assumed. Each case has a process of its own: the options are statics, and a flag once
 * given stays set. */
static void
test_switch_config(void)
{
	const gchar *with[] = { "--switch-config", NULL };
	const gchar *without[] = { "--ntb32", NULL };
	g_autoptr(GArray) a = NULL;
	g_autoptr(GArray) b = NULL;
	NcmDeviceOptions options;

	a = parse_opts(without, &options, NULL);
	g_assert_nonnull(a);
	g_assert_false(options.switch_config);
	b = parse_opts(with, &options, NULL);
	g_assert_nonnull(b);
	g_assert_true(options.switch_config);
}

/* --apple-switch implies it: the phone's NCM comes in its own configuration. */
static void
test_apple_switch_implies(void)
{
	const gchar *apple[] = { "--apple-switch", NULL };
	g_autoptr(GArray) a = NULL;
	NcmDeviceOptions options;

	a = parse_opts(apple, &options, NULL);
	g_assert_nonnull(a);
	g_assert_true(options.switch_config);
}

/* --persist waits out what a device may get over, not what the user must settle. */
static void
test_persist_waits_for(void)
{
	static const struct {
		GQuark domain;
		gint code;
		gboolean waits;
	} errors[] = {
		{ 0, NCM_ERROR_NOT_FOUND, TRUE },  /* not plugged in yet */
		{ 0, NCM_ERROR_PERMISSION, TRUE }, /* udev has not given it to us yet */
		{ 0, NCM_ERROR_BUSY, TRUE },       /* another program holds it now */
		{ 0, NCM_ERROR_GONE, TRUE },
		{ 0, NCM_ERROR_PROTOCOL, TRUE },   /* still settling */
		{ 0, NCM_ERROR_FAILED, TRUE },
		{ 0, NCM_ERROR_KERNEL_DRIVER, FALSE },
		{ 0, NCM_ERROR_CONFIG_INACTIVE, FALSE },
		{ 0, NCM_ERROR_UNSUPPORTED, FALSE },
		{ 1, G_OPTION_ERROR_BAD_VALUE, FALSE }, /* --mtu over the device's, several match */
		{ 2, G_IO_ERROR_PERMISSION_DENIED, FALSE }, /* no CAP_NET_ADMIN for the TAP */
	};

	g_assert_false(cli_persist_waits_for(NULL));
	for (guint i = 0; i < G_N_ELEMENTS(errors); i++) {
		GQuark domain = errors[i].domain == 0 ? NCM_ERROR
				: errors[i].domain == 1 ? G_OPTION_ERROR : G_IO_ERROR;
		g_autoptr(GError) e = g_error_new_literal(domain, errors[i].code, "x");

		g_assert_cmpint(cli_persist_waits_for(e), ==, errors[i].waits);
	}
}

typedef struct {
	const gchar *path;
	void (*func)(void);
} Case;

static const Case cases[] = {
	{ "/cli-devices/none", test_one_zero },
	{ "/cli-devices/kinds-combine", test_kinds_combine },
	{ "/cli-devices/kind-again-splits", test_kind_again_splits },
	{ "/cli-devices/bad-selector", test_bad_selector },
	{ "/cli-devices/single-refuses-two", test_single_refuses_two },
	{ "/cli-devices/switch-config", test_switch_config },
	{ "/cli-devices/apple-switch-implies", test_apple_switch_implies },
	{ "/cli-devices/persist-waits-for", test_persist_waits_for },
};

/*
 * The options are the programs' statics, parsed once per process: each
 * case parses in its own child, so no parse replaces (and leaks) another's.
 */
static void
run_in_child(gconstpointer data)
{
	const Case *c = data;

	if (g_test_subprocess()) {
		c->func();
		return;
	}
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
	g_test_trap_assert_passed();
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
		g_test_add_data_func(cases[i].path, &cases[i], run_in_child);
	return g_test_run();
}
