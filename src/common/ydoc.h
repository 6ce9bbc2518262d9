/* libyaml's document API as the control API's readers use it (the request validator, the
 * spec loader, tunlessctl's replies): one document loaded with a message on failure, nodes
 * by key and by index, and a delete that wipes every scalar (requests may carry keys). */
#ifndef TL_COMMON_YDOC_H
#define TL_COMMON_YDOC_H

#include <stddef.h>

#include <yaml.h>

/* Loads exactly one non-empty document from text. 0, or -1 with a message in err ("invalid
 * YAML: <problem> at line L column C", "empty document", "more than one YAML document"). */
int tl_ydoc_load(yaml_document_t *doc, const char *text, size_t len, char *err, size_t errlen);
void tl_ydoc_delete(yaml_document_t *doc);

yaml_node_t *tl_ydoc_node(yaml_document_t *doc, int id);
/* The text of a scalar node; NULL for anything else (or no node). */
const char *tl_ydoc_scalar(const yaml_node_t *n);
/* What a node is, for messages: "a mapping", "a sequence", "a scalar", "nothing". */
const char *tl_ydoc_kind(const yaml_node_t *n);
/* Items of a sequence, pairs of a mapping, 0 for anything else. */
size_t tl_ydoc_len(const yaml_node_t *n);
yaml_node_t *tl_ydoc_item(yaml_document_t *doc, const yaml_node_t *seq, size_t i);
/* The value of a mapping's key (a scalar key equal to key), or NULL. */
yaml_node_t *tl_ydoc_get(yaml_document_t *doc, const yaml_node_t *map, const char *key);

#endif
