/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certwatcher.h — the serving certificate of the webhook server, reloaded when its files change
 * (controller-runtime pkg/certwatcher: inotify on the files' directory plus a poll, reload only
 * on changed content, keep the last good pair when a new one does not load).
 *
 * The watcher lives on a libevent loop: an inotify descriptor on the directory (events for the
 * directory's entries, so kubelet's projected-Secret update — files written into a new
 * "..<timestamp>" directory, a "..data_tmp" symlink to it renamed over "..data" — is seen as a
 * rename in the watched directory) and a poll timer as the fallback for filesystems without
 * inotify events (network mounts) or a directory created after start. Each check reads both
 * files (the certificate once more after the key, starting over when a swap came in between, so
 * a half-swapped pair is not tried); when their bytes differ from the last pair tried, it builds a new SSL_CTX from them and,
 * if that succeeds (certificate chain parses, key parses and matches), makes it current.
 * A pair that fails is logged once (host/util/log.h) and the previous context stays current.
 *
 * Connections take the current SSL_CTX when they are accepted (SSL_new holds a reference), so a
 * reload affects only new connections; the old context is freed with its last connection.
 *
 * Thread-safety: new/free and lop_certwatcher_ctx run on the loop thread (or before it starts /
 * after it stopped); lop_certwatcher_reloads may be read from any thread.
 */
#ifndef LOP_RUNTIME_WEBHOOK_CERTWATCHER_H
#define LOP_RUNTIME_WEBHOOK_CERTWATCHER_H

#include "host/util/err.h"

#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdint.h>

typedef struct lop_certwatcher lop_certwatcher_t;

/* The poll fallback's period (controller-runtime's certwatcher polls every 10 s). */
#define LOP_CERTWATCHER_POLL_S 10

/*
 * Load dir/cert_name (PEM certificate, then intermediates) and dir/key_name (PEM private key) and
 * watch dir on base (borrowed; must outlive the watcher). LOP_EINVAL with err naming the file
 * when a file is missing, unreadable or broken, or when the key does not match; LOP_ERR when
 * OpenSSL or libevent fails. A missing inotify (ENOSYS, limits) is not an error: the poll remains.
 */
LOP_MUST_CHECK lop_rc_t lop_certwatcher_new(struct event_base *base, const char *dir, const char *cert_name,
                                            const char *key_name, lop_certwatcher_t **out, lop_err_t *err);

/* The current context, borrowed: valid until the next reload on this loop (take your own
 * reference with SSL_new or SSL_CTX_up_ref to keep it longer). */
SSL_CTX *lop_certwatcher_ctx(lop_certwatcher_t *w);

/* Check the files now (what an inotify event or the poll does). */
void lop_certwatcher_check(lop_certwatcher_t *w);

/* Successful reloads since new (the initial load is not one). Any thread. */
uint64_t lop_certwatcher_reloads(const lop_certwatcher_t *w);

/* A TLS 1.2+ server context (the watcher's settings) from a PEM certificate chain and key held
 * in memory (a self-signed pair made at start, certgen.h); owned by the caller (SSL_CTX_free).
 * NULL with err (LOP_EINVAL) when either does not load or they do not match. Any thread. */
SSL_CTX *lop_tls_server_ctx_from_pem(const char *cert_pem, const char *key_pem, lop_err_t *err);

/* Stop watching and drop the watcher's reference to the context. NULL ok. */
void lop_certwatcher_free(lop_certwatcher_t *w);

#endif
