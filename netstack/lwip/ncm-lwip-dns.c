/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-dns.c: names resolved through the device with lwIP's DNS client; servers from DHCP, RA or the application. */
#define G_LOG_DOMAIN "ncm-lwip"

#include <string.h>

#include "lwip/dns.h"

#include "ncm-lwip-private.h"

G_STATIC_ASSERT(NCM_LWIP_DNS_MAX_SERVERS == DNS_MAX_SERVERS);

/*
 * Core lock: the servers the application set. DHCP and router
 * advertisements write lwIP's server table whenever a lease or an RA
 * comes, so these are written over it again before every query.
 */
static ip_addr_t static_servers[DNS_MAX_SERVERS];
static gboolean have_static[DNS_MAX_SERVERS];

void
ncm_lwip_stack_set_dns_server(NcmLwipStack *self, guint index, GInetAddress *address)
{
	g_return_if_fail(NCM_LWIP_IS_STACK(self));
	g_return_if_fail(index < DNS_MAX_SERVERS);
	nlw_core_lock();
	have_static[index] = address != NULL;
	if (address != NULL) {
		nlw_addr_from_gio(address, &static_servers[index]);
		/* A link-local server is on the (default or first) netif's link. */
		nlw_addr_assign_zone(&static_servers[index], 0);
	}
	dns_setserver((u8_t)index, address != NULL ? &static_servers[index] : NULL);
	nlw_core_unlock();
}

GList *
ncm_lwip_stack_get_dns_servers(NcmLwipStack *self)
{
	GList *list = NULL;

	g_return_val_if_fail(NCM_LWIP_IS_STACK(self), NULL);
	nlw_core_lock();
	for (u8_t i = 0; i < DNS_MAX_SERVERS; i++) {
		const ip_addr_t *ip = dns_getserver(i);

		if (!ip_addr_isany(ip))
			list = g_list_append(list, nlw_addr_to_gio(ip));
	}
	nlw_core_unlock();
	return list;
}

/* Core lock held. */
static void
restore_static_servers(void)
{
	for (u8_t i = 0; i < DNS_MAX_SERVERS; i++)
		if (have_static[i])
			dns_setserver(i, &static_servers[i]);
}

/*
 * One lookup. lwIP cannot cancel a query: its callback always comes
 * (with NULL after DNS_MAX_RETRIES timeouts), so the waiter and the
 * callback each hold a reference and whichever is last frees it.
 */
typedef struct {
	gint refs; /* atomic */
	GMutex lock;
	GCond cond;
	gboolean done;
	gboolean found;
	ip_addr_t addr;
} Lookup;

static void
lookup_unref(Lookup *l)
{
	if (!g_atomic_int_dec_and_test(&l->refs))
		return;
	g_cond_clear(&l->cond);
	g_mutex_clear(&l->lock);
	g_free(l);
}

/* Core lock held: the tcpip thread, or the link thread's input. Never blocks. */
static void
lookup_found(const char *name, const ip_addr_t *addr, void *arg)
{
	Lookup *l = arg;

	ncm_mutex_lock(&l->lock);
	l->done = TRUE;
	l->found = addr != NULL;
	if (addr != NULL)
		ip_addr_copy(l->addr, *addr);
	g_cond_broadcast(&l->cond);
	ncm_mutex_unlock(&l->lock);
	lookup_unref(l);
}

static u8_t
addrtype_for(GSocketFamily family)
{
	switch (family) {
	case G_SOCKET_FAMILY_IPV4:
		return LWIP_DNS_ADDRTYPE_IPV4;
	case G_SOCKET_FAMILY_IPV6:
		return LWIP_DNS_ADDRTYPE_IPV6;
	default:
		return LWIP_DNS_ADDRTYPE_IPV4_IPV6;
	}
}

static void
wake_lookup(GCancellable *cancellable, gpointer data)
{
	Lookup *l = data;

	ncm_mutex_lock(&l->lock);
	g_cond_broadcast(&l->cond);
	ncm_mutex_unlock(&l->lock);
}

/* Waits for the callback or the cancellable; TRUE when lwIP answered. */
static gboolean
lookup_wait(Lookup *l, GCancellable *cancellable, GError **error)
{
	gulong handler = 0;
	gboolean done;

	if (cancellable != NULL)
		handler = g_cancellable_connect(cancellable, G_CALLBACK(wake_lookup), l, NULL);
	ncm_mutex_lock(&l->lock);
	while (!l->done && !g_cancellable_is_cancelled(cancellable))
		ncm_cond_wait(&l->cond, &l->lock);
	done = l->done;
	ncm_mutex_unlock(&l->lock);
	if (handler != 0)
		g_cancellable_disconnect(cancellable, handler);
	if (!done)
		g_cancellable_set_error_if_cancelled(cancellable, error);
	return done;
}

static GInetAddress *
lookup_error(const gchar *name, err_t err, GError **error)
{
	if (err == ERR_VAL)
		g_set_error(error, G_RESOLVER_ERROR, G_RESOLVER_ERROR_TEMPORARY_FAILURE,
			    "cannot resolve %s: no DNS server (none from DHCP or router "
			    "advertisements; set one, e.g. ncm-proxy --dns)", name);
	else if (err == ERR_MEM)
		g_set_error(error, G_RESOLVER_ERROR, G_RESOLVER_ERROR_TEMPORARY_FAILURE,
			    "cannot resolve %s: too many lookups at once, try again", name);
	else
		g_set_error(error, G_RESOLVER_ERROR, G_RESOLVER_ERROR_NOT_FOUND,
			    "cannot resolve %s: not a valid host name", name);
	return NULL;
}

GInetAddress *
ncm_lwip_stack_resolve(NcmLwipStack *self, const gchar *name, GSocketFamily family,
		       GCancellable *cancellable, GError **error)
{
	Lookup *l;
	ip_addr_t addr;
	err_t err;
	GInetAddress *result = NULL;

	g_return_val_if_fail(NCM_LWIP_IS_STACK(self), NULL);
	g_return_val_if_fail(name != NULL, NULL);
	if (g_cancellable_set_error_if_cancelled(cancellable, error))
		return NULL;
	l = g_new0(Lookup, 1);
	l->refs = 2;
	g_mutex_init(&l->lock);
	g_cond_init(&l->cond);
	nlw_core_lock();
	restore_static_servers();
	err = dns_gethostbyname_addrtype(name, &addr, lookup_found, l, addrtype_for(family));
	nlw_core_unlock();
	if (err != ERR_INPROGRESS) {
		lookup_unref(l); /* the callback's: it will not come */
		lookup_unref(l);
		return err == ERR_OK ? nlw_addr_to_gio(&addr) : lookup_error(name, err, error);
	}
	if (lookup_wait(l, cancellable, error)) {
		if (l->found)
			result = nlw_addr_to_gio(&l->addr);
		else
			g_set_error(error, G_RESOLVER_ERROR, G_RESOLVER_ERROR_NOT_FOUND,
				    "cannot resolve %s: the DNS server has no %saddress for it, "
				    "or did not answer", name,
				    family == G_SOCKET_FAMILY_IPV4   ? "IPv4 "
				    : family == G_SOCKET_FAMILY_IPV6 ? "IPv6 "
								     : "");
	}
	lookup_unref(l);
	return result;
}

static void
resolve_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
	const gchar *name = task_data;
	GError *error = NULL;
	GSocketFamily family = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(task), "family"));
	GInetAddress *address = ncm_lwip_stack_resolve(source, name, family, cancellable, &error);

	nlw_task_return(task, address, g_object_unref, error);
}

/* GTask source tag (ISO C has no function-to-object pointer cast). */
static char source_tag;

void
ncm_lwip_stack_resolve_async(NcmLwipStack *self, const gchar *name, GSocketFamily family,
			     GCancellable *cancellable, GAsyncReadyCallback callback,
			     gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, &source_tag);
	g_task_set_task_data(task, g_strdup(name), g_free);
	g_object_set_data(G_OBJECT(task), "family", GINT_TO_POINTER(family));
	nlw_task_run_in_thread(task, resolve_thread);
}

GInetAddress *
ncm_lwip_stack_resolve_finish(NcmLwipStack *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return nlw_task_propagate(result, error);
}
