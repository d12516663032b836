/* gwsyncd entry point: the real lifecycle lands once poller/dispatcher exist (lead). */
#include <stdio.h>
int main(void)
{
	puts("gwsyncd: under construction");
	return 1;
}
