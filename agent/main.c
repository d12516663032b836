/* gwsyncd entry point (being written). */
#include <stdio.h>
int main(void)
{
	puts("gwsyncd");
	return 0;
}
