/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_table_print.h — the built-in kinds' table printers (kubernetes
 * pkg/printers/internalversion/printers.go: the columns kube-apiserver serves for each kind, and
 * the cells it computes from an object).
 *
 * Pure; any thread.
 */
#ifndef LOP_APISERVER_AS_TABLE_PRINT_H
#define LOP_APISERVER_AS_TABLE_PRINT_H

#include <jansson.h>
#include <time.h>

typedef struct as_table_col {
    const char *name, *type, *format, *description;
    int priority; /* > 0: shown by `kubectl get -o wide` only */
} as_table_col_t;

/* Appends one cell per column to cells for obj (the object as served by its core or group API). */
typedef void (*as_table_row_fn)(const json_t *obj, json_t *cells, time_t now);

typedef struct as_table_printer {
    const char *group, *plural;
    const as_table_col_t *cols; /* terminated by a column with a NULL name */
    as_table_row_fn row;
} as_table_printer_t;

/* The printer of group/plural, or NULL when the kind has none (the default convertor applies). */
const as_table_printer_t *as_table_printer_find(const char *group, const char *plural);

/* A metav1.LabelSelector as labels.Selector's String() ("app=web,tier in (a,b)"; "" when empty
 * or not an object). Returns a malloc'd string. */
char *as_label_selector_string(const json_t *sel);

/* Shared column descriptions (ObjectMeta's name and creationTimestamp). */
extern const char as_desc_name[];
extern const char as_desc_created[];

#endif
