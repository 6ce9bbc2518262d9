/* libyaml document helpers (ydoc.h). */
#include "common/ydoc.h"

#include <stdio.h>
#include <string.h>

yaml_node_t *tl_ydoc_node(yaml_document_t *doc, int id)
{
	return yaml_document_get_node(doc, id);
}

const char *tl_ydoc_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

const char *tl_ydoc_kind(const yaml_node_t *n)
{
	if (!n)
		return "nothing";
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a sequence";
	case YAML_SCALAR_NODE: return "a scalar";
	default: return "nothing";
	}
}

size_t tl_ydoc_len(const yaml_node_t *n)
{
	if (n && n->type == YAML_SEQUENCE_NODE)
		return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (n && n->type == YAML_MAPPING_NODE)
		return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	return 0;
}

yaml_node_t *tl_ydoc_item(yaml_document_t *doc, const yaml_node_t *seq, size_t i)
{
	return yaml_document_get_node(doc, seq->data.sequence.items.start[i]);
}

yaml_node_t *tl_ydoc_get(yaml_document_t *doc, const yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = tl_ydoc_scalar(yaml_document_get_node(doc, p->key));

		if (k && !strcmp(k, key))
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

void tl_ydoc_delete(yaml_document_t *doc)
{
	for (yaml_node_t *n = doc->nodes.start; n && n < doc->nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
			explicit_bzero(n->data.scalar.value, n->data.scalar.length);
	yaml_document_delete(doc);
}

static void parse_error(const yaml_parser_t *p, char *out, size_t len)
{
	const char *problem = p->problem ? p->problem : "cannot parse";

	if (p->error == YAML_MEMORY_ERROR)
		snprintf(out, len, "out of memory");
	else if (p->context)
		snprintf(out, len, "invalid YAML: %s at line %zu column %zu (%s at line %zu)", problem,
			 p->problem_mark.line + 1, p->problem_mark.column + 1, p->context,
			 p->context_mark.line + 1);
	else
		snprintf(out, len, "invalid YAML: %s at line %zu column %zu", problem, p->problem_mark.line + 1,
			 p->problem_mark.column + 1);
}

int tl_ydoc_load(yaml_document_t *doc, const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_document_t extra;
	int rc = -1;

	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, doc)) {
		parse_error(&p, err, errlen);
		yaml_parser_delete(&p);
		return -1;
	}
	if (!yaml_document_get_root_node(doc)) {
		snprintf(err, errlen, "empty document");
	} else if (!yaml_parser_load(&p, &extra)) {
		parse_error(&p, err, errlen);
	} else {
		if (yaml_document_get_root_node(&extra))
			snprintf(err, errlen, "more than one YAML document (one per request)");
		else
			rc = 0;
		tl_ydoc_delete(&extra);
	}
	if (rc != 0)
		tl_ydoc_delete(doc);
	yaml_parser_delete(&p);
	return rc;
}
