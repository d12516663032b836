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

void groupdoc_write(FILE *fp, const char *group, const char *md5, int64_t last_modify_time,
                    const struct gw_item *const *items, size_t n_items)
{
	fputs("{\"group\": ", fp);
	put_string(fp, group);
	fputs(", \"md5\": ", fp);
	put_string(fp, md5);
	fprintf(fp, ", \"lastModifyTime\": %" PRId64 ", \"data\": [", last_modify_time);
	for (size_t i = 0; i < n_items; i++) {
		if (i)
			fputc(',', fp);
		fwrite(items[i]->json, 1, items[i]->json_len, fp);
	}
	fputs("]}\n", fp);
}
