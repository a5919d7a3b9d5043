/* Prints the offset and size of every field of the control and node blocks,
 * their constants and the fault codes, for the Go tests that check
 * internal/ctl's mirror of the headers. */
#include <stddef.h>
#include <stdio.h>

#include "../carve_ctl.h"
#include "../carve_node.h"

#define F(name) printf("%s %zu %zu\n", #name, offsetof(struct carve_ctl, name), sizeof(((struct carve_ctl *)0)->name))

int main(void)
{
	printf("sizeof %zu %zu\n", sizeof(struct carve_ctl), sizeof(struct carve_ctl));
	F(magic); F(version); F(size); F(pid); F(flags); F(start_ticks); F(created_ns);
	F(gen); F(mask); F(live); F(state); F(tmd_version); F(launches); F(last_launch_ns);
	F(refused); F(applied_gen); F(tenant_class); F(pad0); F(pad1);
	F(tenant); F(sms); F(fault); F(fault_claim); F(fault_ns); F(fault_call); F(reserved);
	F(comm); F(inflight_max); F(share_ppm); F(epoch_ns); F(node); F(tide_state); F(inflight);
	F(held_ns); F(held_launches); F(narrow_launches); F(busy_ns); F(requests); F(queue_us); F(kernel_us); F(floor); F(tide_reserved);
#define N(name) printf("node.%s %zu %zu\n", #name, offsetof(struct carve_node, name), sizeof(((struct carve_node *)0)->name))
#define S(name) printf("slot.%s %zu %zu\n", #name, offsetof(struct carve_node_slot, name), sizeof(((struct carve_node_slot *)0)->name))
	printf("node.sizeof %zu %zu\n", sizeof(struct carve_node), sizeof(struct carve_node));
	printf("slot.sizeof %zu %zu\n", sizeof(struct carve_node_slot), sizeof(struct carve_node_slot));
	N(magic); N(version); N(size); N(live); N(lease_ns); N(created_ns); N(fixed); N(gen); N(busy); N(beat_ns); N(pad); N(slots); N(rest);
	S(pid); S(busy); S(start_ticks); S(beat_ns); S(busy_ns); S(busy_since_ns); S(reserved); S(requests);
#define C(name, value) printf("const %s %llu\n", name, (unsigned long long)(value));
	C("CARVE_CTL_MAGIC", CARVE_CTL_MAGIC); C("CARVE_CTL_VERSION", CARVE_CTL_VERSION); C("CARVE_CTL_SIZE", CARVE_CTL_SIZE);
	C("CARVE_NODE_MAGIC", CARVE_NODE_MAGIC); C("CARVE_NODE_VERSION", CARVE_NODE_VERSION);
	C("CARVE_NODE_SIZE", CARVE_NODE_SIZE); C("CARVE_NODE_SLOTS", CARVE_NODE_SLOTS);
	C("CARVE_NODE_LEASE_NS", CARVE_NODE_LEASE_NS); C("CARVE_NODE_QUIET_NS", CARVE_NODE_QUIET_NS); C("CARVE_NODE_NARROW_MIN", CARVE_NODE_NARROW_MIN); C("CARVE_NODE_SLOT_LOCK(5)", CARVE_NODE_SLOT_LOCK(5));
	C("CARVE_FLAG_ALLOW_UNPARTITIONED", CARVE_FLAG_ALLOW_UNPARTITIONED); C("CARVE_FLAG_ALL_SMS", CARVE_FLAG_ALL_SMS);
	C("CARVE_FLAG_MPS", CARVE_FLAG_MPS); C("CARVE_FLAG_LS_OWN", CARVE_FLAG_LS_OWN);
	C("CARVE_STATE_NEW", CARVE_STATE_NEW); C("CARVE_STATE_HOOKED", CARVE_STATE_HOOKED);
	C("CARVE_STATE_UNHOOKED", CARVE_STATE_UNHOOKED); C("CARVE_STATE_NO_DRIVER", CARVE_STATE_NO_DRIVER);
	C("CARVE_CLASS_NONE", CARVE_CLASS_NONE); C("CARVE_CLASS_LS", CARVE_CLASS_LS); C("CARVE_CLASS_BE", CARVE_CLASS_BE);
	C("CARVE_TIDE_OFF", CARVE_TIDE_OFF); C("CARVE_TIDE_IDLE", CARVE_TIDE_IDLE);
	C("CARVE_TIDE_BUSY", CARVE_TIDE_BUSY); C("CARVE_TIDE_HELD", CARVE_TIDE_HELD);
#define FAULT(code, name) printf("faultcode %d %s\n", code, #name);
	CARVE_FAULTS(FAULT)
	return 0;
}
