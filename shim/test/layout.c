/* Prints the offset and size of every field of the control and node blocks,
 * what a child's control block takes of each field, their constants and the
 * fault codes, for the Go tests that check
 * internal/ctl's mirror of the headers. */
#include <stddef.h>
#include <stdio.h>

#include "../carve_ctl.h"
#include "../carve_node.h"

/* each field of the control block as CARVE_CTL_FIELDS lists it, and what a
 * child's block takes of it ("kind NAME INHERIT") */
#define F(name, kind) \
	printf("%s %zu %zu\n", #name, offsetof(struct carve_ctl, name), sizeof(((struct carve_ctl *)0)->name)); \
	printf("kind %s %s\n", #name, #kind);

int main(void)
{
	printf("sizeof %zu %zu\n", sizeof(struct carve_ctl), sizeof(struct carve_ctl));
	CARVE_CTL_FIELDS(F)
#define N(name) printf("node.%s %zu %zu\n", #name, offsetof(struct carve_node, name), sizeof(((struct carve_node *)0)->name))
#define S(name) printf("slot.%s %zu %zu\n", #name, offsetof(struct carve_node_slot, name), sizeof(((struct carve_node_slot *)0)->name))
	printf("node.sizeof %zu %zu\n", sizeof(struct carve_node), sizeof(struct carve_node));
	printf("slot.sizeof %zu %zu\n", sizeof(struct carve_node_slot), sizeof(struct carve_node_slot));
#define P(name) printf("part.%s %zu %zu\n", #name, offsetof(struct carve_gpu_part, name), sizeof(((struct carve_gpu_part *)0)->name))
	printf("part.sizeof %zu %zu\n", sizeof(struct carve_gpu_part), sizeof(struct carve_gpu_part));
#define H(name) printf("hist.%s %zu %zu\n", #name, offsetof(struct carve_hist, name), sizeof(((struct carve_hist *)0)->name))
	printf("hist.sizeof %zu %zu\n", sizeof(struct carve_hist), sizeof(struct carve_hist));
	H(sum_ns); H(bucket);
#define KH(name) printf("kernhead.%s %zu %zu\n", #name, offsetof(struct carve_kern_head, name), sizeof(((struct carve_kern_head *)0)->name))
#define KE(name) printf("kernentry.%s %zu %zu\n", #name, offsetof(struct carve_kern_entry, name), sizeof(((struct carve_kern_entry *)0)->name))
	printf("kernhead.sizeof %zu %zu\n", sizeof(struct carve_kern_head), sizeof(struct carve_kern_head));
	printf("kernentry.sizeof %zu %zu\n", sizeof(struct carve_kern_entry), sizeof(struct carve_kern_entry));
	KH(magic); KH(count); KH(id);
	KE(name); KE(bytes); KE(flags); KE(pad);
	P(gpu); P(mask); P(live); P(floor); P(sms); P(pad); P(node); P(bw_off_ns);
	N(magic); N(version); N(size); N(live); N(lease_ns); N(created_ns); N(fixed); N(gen); N(used); N(pad); N(slots); N(rest);
	S(pid); S(kind); S(start_ticks); S(serial); S(pad); S(reserved); S(claim);
#define L(name) printf("ls.%s %zu %zu\n", #name, offsetof(struct carve_ls, name), sizeof(((struct carve_ls *)0)->name))
#define LP(name) printf("lsproc.%s %zu %zu\n", #name, offsetof(struct carve_ls_proc, name), sizeof(((struct carve_ls_proc *)0)->name))
#define B(name) printf("be.%s %zu %zu\n", #name, offsetof(struct carve_be, name), sizeof(((struct carve_be *)0)->name))
	printf("ls.sizeof %zu %zu\n", sizeof(struct carve_ls), sizeof(struct carve_ls));
	printf("lsproc.sizeof %zu %zu\n", sizeof(struct carve_ls_proc), sizeof(struct carve_ls_proc));
	printf("be.sizeof %zu %zu\n", sizeof(struct carve_be), sizeof(struct carve_be));
	L(magic); L(version); L(size); L(slot); L(busy); L(beat_ns); L(timing_ns); L(pad); L(procs); L(rest);
	LP(pid); LP(busy); LP(beat_ns); LP(busy_ns); LP(busy_since_ns); LP(requests); LP(timing_ns); LP(pad);
	B(magic); B(version); B(size); B(pad); B(be_launch_ns); B(rest);
#define C(name, value) printf("const %s %llu\n", name, (unsigned long long)(value));
	C("CARVE_CTL_MAGIC", CARVE_CTL_MAGIC); C("CARVE_CTL_VERSION", CARVE_CTL_VERSION); C("CARVE_CTL_SIZE", CARVE_CTL_SIZE); C("CARVE_GPUS", CARVE_GPUS);
	C("CARVE_NODE_MAGIC", CARVE_NODE_MAGIC); C("CARVE_NODE_VERSION", CARVE_NODE_VERSION);
	C("CARVE_NODE_SIZE", CARVE_NODE_SIZE); C("CARVE_NODE_SLOTS", CARVE_NODE_SLOTS);
	C("CARVE_NODE_LEASE_NS", CARVE_NODE_LEASE_NS); C("CARVE_NODE_QUIET_NS", CARVE_NODE_QUIET_NS); C("CARVE_NODE_TIMING_NS", CARVE_NODE_TIMING_NS); C("CARVE_NODE_NARROW_MIN", CARVE_NODE_NARROW_MIN); C("CARVE_LS_PROC_LOCK(5)", CARVE_LS_PROC_LOCK(5));
	C("CARVE_LS_MAGIC", CARVE_LS_MAGIC); C("CARVE_LS_SIZE", CARVE_LS_SIZE); C("CARVE_LS_PROCS", CARVE_LS_PROCS);
	C("CARVE_BE_MAGIC", CARVE_BE_MAGIC); C("CARVE_BE_SIZE", CARVE_BE_SIZE); C("CARVE_NODE_BE_FILES", CARVE_NODE_BE_FILES);
	C("CARVE_SEAT_FREE", CARVE_SEAT_FREE); C("CARVE_SEAT_TENANT", CARVE_SEAT_TENANT); C("CARVE_SEAT_CLAIM", CARVE_SEAT_CLAIM);
	C("CARVE_FLAG_ALLOW_UNPARTITIONED", CARVE_FLAG_ALLOW_UNPARTITIONED); C("CARVE_FLAG_ALL_SMS", CARVE_FLAG_ALL_SMS);
	C("CARVE_FLAG_MPS", CARVE_FLAG_MPS); C("CARVE_FLAG_LS_OWN", CARVE_FLAG_LS_OWN);
	C("CARVE_STATE_NEW", CARVE_STATE_NEW); C("CARVE_STATE_HOOKED", CARVE_STATE_HOOKED);
	C("CARVE_STATE_UNHOOKED", CARVE_STATE_UNHOOKED); C("CARVE_STATE_NO_DRIVER", CARVE_STATE_NO_DRIVER);
	C("CARVE_CLASS_NONE", CARVE_CLASS_NONE); C("CARVE_CLASS_LS", CARVE_CLASS_LS); C("CARVE_CLASS_BE", CARVE_CLASS_BE); C("CARVE_EPOCH_NS", CARVE_EPOCH_NS); C("CARVE_PAUSE_MAX_NS", CARVE_PAUSE_MAX_NS);
	C("CARVE_KERN_MAGIC", CARVE_KERN_MAGIC); C("CARVE_KERN_MAX", CARVE_KERN_MAX); C("CARVE_KERN_COMPUTE", CARVE_KERN_COMPUTE);
	C("CARVE_BW_STRICT", CARVE_BW_STRICT); C("CARVE_BW_EPOCH_NS", CARVE_BW_EPOCH_NS);
	C("CARVE_TIDE_OFF", CARVE_TIDE_OFF); C("CARVE_TIDE_IDLE", CARVE_TIDE_IDLE);
	C("CARVE_TIDE_BUSY", CARVE_TIDE_BUSY); C("CARVE_TIDE_HELD", CARVE_TIDE_HELD);
	C("CARVE_HIST_BUCKETS", CARVE_HIST_BUCKETS);
	for (int i = 0; i < CARVE_HIST_BUCKETS - 1; i++)
		printf("const CARVE_HIST_BOUND_NS(%d) %llu\n", i, (unsigned long long)CARVE_HIST_BOUND_NS(i));
#define FAULT(code, name) printf("faultcode %d %s\n", code, #name);
	CARVE_FAULTS(FAULT)
	return 0;
}
