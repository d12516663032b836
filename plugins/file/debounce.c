/* Debounce arithmetic (see debounce.h). */
#include "debounce.h"

void debounce_init(struct debounce *d, int64_t quiet_ms, int64_t max_ms)
{
	d->quiet_ms = quiet_ms;
	d->max_ms = max_ms < quiet_ms ? quiet_ms : max_ms;
	d->pending = 0;
	d->first_ms = d->last_ms = 0;
}

void debounce_note(struct debounce *d, int64_t now)
{
	if (!d->pending) {
		d->pending = 1;
		d->first_ms = now;
	}
	d->last_ms = now;
}

int64_t debounce_deadline(const struct debounce *d)
{
	if (!d->pending)
		return -1;
	int64_t quiet = d->last_ms + d->quiet_ms, ceiling = d->first_ms + d->max_ms;
	return quiet < ceiling ? quiet : ceiling;
}

int debounce_due(const struct debounce *d, int64_t now)
{
	return d->pending && now >= debounce_deadline(d);
}

void debounce_clear(struct debounce *d)
{
	d->pending = 0;
}
