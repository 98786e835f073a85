/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rand.h — fast non-cryptographic random numbers and random (version 4) UUIDs.
 *
 * Each thread has its own generator (xorshift64*), seeded once from getrandom(2) (the clock when
 * that fails), so calls take no lock and make no system call after the first. Not for secrets:
 * key material comes from OpenSSL's RAND_bytes.
 */
#ifndef LOP_UTIL_RAND_H
#define LOP_UTIL_RAND_H

#include <stddef.h>
#include <stdint.h>

/* The next 64 random bits of this thread's generator. */
uint64_t lop_rand_u64(void);

/* A random UUID (RFC 9562 version 4, variant 10) in its 36-character lowercase text form, as
 * controller-runtime's reconcileID (k8s.io/apimachinery/pkg/util/uuid). out must hold at least
 * LOP_UUID_LEN + 1 bytes; returns out. */
#define LOP_UUID_LEN 36
char *lop_uuid4(char *out);

#endif
