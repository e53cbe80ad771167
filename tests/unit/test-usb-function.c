/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-usb-function.c: device selectors (VID:PID, serial, path, MAC) parse and match as documented. */
#include <string.h>

#include <ncm.h>

static NcmFunctionInfo
sample(void)
{
	NcmFunctionInfo info = { .vid = 0x1d6b, .pid = 0x0104, .serial = (gchar *)"abc",
				 .port_path = (gchar *)"1-1.2", .have_mac = TRUE,
				 .mac = { 2, 0x4e, 0x43, 0x4d, 0, 2 } };
	return info;
}

static gboolean
matches(const char *const *selectors)
{
	NcmMatch m = { 0 };
	NcmFunctionInfo info = sample();

	for (guint i = 0; selectors[i]; i++)
		g_assert_true(ncm_match_parse(&m, selectors[i], NULL));
	return ncm_match_test(&m, &info);
}

static void
test_match_fields(void)
{
	g_assert_true(matches((const char *[]){ NULL }));
	g_assert_true(matches((const char *[]){ "1d6b:0104", NULL }));
	g_assert_false(matches((const char *[]){ "1d6b:0105", NULL }));
	g_assert_true(matches((const char *[]){ "serial=abc", NULL }));
	g_assert_false(matches((const char *[]){ "serial=abd", NULL }));
	g_assert_true(matches((const char *[]){ "path=1-1.2", NULL }));
	g_assert_false(matches((const char *[]){ "path=1-1", NULL }));
	g_assert_true(matches((const char *[]){ "mac=02:4e:43:4d:00:02", NULL }));
	g_assert_false(matches((const char *[]){ "mac=02:4e:43:4d:00:03", NULL }));
	/* Selectors combine: all must hold. */
	g_assert_true(matches((const char *[]){ "1d6b:0104", "serial=abc", "path=1-1.2", NULL }));
	g_assert_false(matches((const char *[]){ "1d6b:0104", "serial=zzz", NULL }));
}

/* An iPhone's USB serial is its UDID without the dash its tools print. */
static void
test_match_apple_udid(void)
{
	NcmMatch m = { 0 };
	NcmFunctionInfo info = sample();

	info.vid = 0x05ac;
	info.serial = (gchar *)"00008030001A35E02E8A802E";
	g_assert_true(ncm_match_parse(&m, "serial=00008030-001A35E02E8A802E", NULL));
	g_assert_true(ncm_match_test(&m, &info));
	m.serial = "00008030-001a35e02e8a802e";
	g_assert_true(ncm_match_test(&m, &info));
	m.serial = "00008030-001A35E02E8A802F";
	g_assert_false(ncm_match_test(&m, &info));
	m.serial = "00008030-001A35E02E8A802";
	g_assert_false(ncm_match_test(&m, &info));
	/* Another vendor's serial is matched as it is. */
	info.vid = 0x1d6b;
	m.serial = "00008030-001A35E02E8A802E";
	g_assert_false(ncm_match_test(&m, &info));
	m.serial = "00008030001A35E02E8A802E";
	g_assert_true(ncm_match_test(&m, &info));
}

static void
test_match_no_mac(void)
{
	NcmMatch m = { 0 };
	NcmFunctionInfo info = sample();

	info.have_mac = FALSE;
	g_assert_true(ncm_match_parse(&m, "mac=02:4e:43:4d:00:02", NULL));
	/* An unreadable MAC never matches a MAC selector. */
	g_assert_false(ncm_match_test(&m, &info));
}

static void
test_match_bad(void)
{
	const char *bad[] = { "", "1d6b", "1d6b:0104x", "zz:zz", "mac=02:4e:43", "mac=02-4e-43-4d-00-02",
			      "mac=02:4e:43:4d:00:02:11", "foo=bar" };

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		NcmMatch m = { 0 };
		g_autoptr(GError) error = NULL;

		g_assert_false(ncm_match_parse(&m, bad[i], &error));
		g_assert_error(error, NCM_ERROR, NCM_ERROR_FAILED);
		/* The message must say what is accepted. */
		g_assert_nonnull(strstr(error->message, "VID:PID"));
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/match/fields", test_match_fields);
	g_test_add_func("/match/no-mac", test_match_no_mac);
	g_test_add_func("/match/apple-udid", test_match_apple_udid);
	g_test_add_func("/match/bad", test_match_bad);
	return g_test_run();
}
