/* Prints the offset and size of every field of struct carve_ctl, for the Go
 * test that checks internal/ctl's mirror of the layout. */
#include <stddef.h>
#include <stdio.h>

#include "../carve_ctl.h"

#define F(name) printf("%s %zu %zu\n", #name, offsetof(struct carve_ctl, name), sizeof(((struct carve_ctl *)0)->name))

int main(void)
{
	printf("sizeof %zu %zu\n", sizeof(struct carve_ctl), sizeof(struct carve_ctl));
	F(magic); F(version); F(size); F(pid); F(flags); F(start_ticks); F(created_ns);
	F(gen); F(mask); F(live); F(state); F(tmd_version); F(launches); F(last_launch_ns);
	F(refused); F(applied_gen); F(tenant_class); F(gate); F(budget_bytes); F(reserved);
	F(comm); F(pad);
	return 0;
}
