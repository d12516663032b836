/*
 * The group document (see groupdoc.h). Items are written as their raw text, never
 * re-serialised: byte-exact with what the admin sent, and no JSON library needed.
 */
#include "shared/groupdoc.h"

#include <inttypes.h>

static void put_string(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(fp, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(fp, "\\u%04x", *p);
		else
			fputc(*p, fp);
	}
	fputc('"', fp);
}

int groupdoc_write_each(FILE *fp, const char *group, const char *md5, int64_t last_modify_time,
                        size_t n_items, const char *(*json_at)(void *arg, size_t i, size_t *len),
                        void *arg)
{
	fputs("{\"group\": ", fp);
	put_string(fp, group);
	fputs(", \"md5\": ", fp);
	put_string(fp, md5);
	fprintf(fp, ", \"lastModifyTime\": %" PRId64 ", \"data\": [", last_modify_time);
	for (size_t i = 0; i < n_items; i++) {
		size_t len;
		const char *json = json_at(arg, i, &len);
		if (!json)
			return -1;
		if (i)
			fputc(',', fp);
		fwrite(json, 1, len, fp);
	}
	fputs("]}\n", fp);
	return 0;
}

struct item_array {
	const struct gw_item *const *v;
};

static const char *array_json(void *arg, size_t i, size_t *len)
{
	const struct item_array *a = arg;
	*len = a->v[i]->json_len;
	return a->v[i]->json;
}

void groupdoc_write(FILE *fp, const char *group, const char *md5, int64_t last_modify_time,
                    const struct gw_item *const *items, size_t n_items)
{
	struct item_array a = {items};
	groupdoc_write_each(fp, group, md5, last_modify_time, n_items, array_json, &a);
}
