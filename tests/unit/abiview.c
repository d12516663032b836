/* The model's versions as a subscriber sees them (see abiview.h). */
#include "abiview.h"

#include <check.h>

#include "model/abi.h"
#include "model/diff.h"

struct group_data *abi_typed(struct group_data *gd)
{
	struct diff d;
	struct abi_change ac;
	struct gw_err err = {0};
	ck_assert_int_eq(diff_build(&d, gd->group, NULL, gd, &err), 0);
	ck_assert_msg(abi_change_make(&ac, &d, NULL, gd, 1, 1, &err) == 0, "%s", err.msg);
	abi_change_free(&ac);
	diff_free(&d);
	return gd;
}

const struct gw_item *abi_item(struct group_data *gd, size_t i)
{
	ck_assert_uint_lt(i, gd->n_items);
	return abi_typed(gd)->abi_items[i];
}

const char *item_key(const struct gd_item *it)
{
	static char buf[8][512];
	static unsigned next;
	char *b = buf[next++ % 8];
	return gd_key_str(it, b, sizeof buf[0]);
}
