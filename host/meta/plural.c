/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plural.c — kubebuilder's plural rule (plural.h).
 */
#include "host/meta/plural.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void lop_meta_guess_plural(const char *kind, char *out, size_t len)
{
    size_t n = strlen(kind);
    char low[256];
    if (n >= sizeof low - 4) n = sizeof low - 4;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)kind[i]);
    low[n] = '\0';
    if (n > 1 && low[n - 1] == 'y' && !strchr("aeiou", low[n - 2]))
        snprintf(out, len, "%.*sies", (int)(n - 1), low);
    else if ((n && strchr("sxz", low[n - 1])) ||
             (n > 1 && (strcmp(low + n - 2, "ch") == 0 || strcmp(low + n - 2, "sh") == 0)))
        snprintf(out, len, "%ses", low);
    else
        snprintf(out, len, "%ss", low);
}
