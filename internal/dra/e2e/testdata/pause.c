/*
 * The pause image's program for carve-dra's real-node test: a pod
 * sandbox's pid 1, that waits until it is told to end (SIGTERM or SIGINT).
 * Built static, so that its image needs no libraries.
 */
#include <signal.h>
#include <unistd.h>

static void end(int sig)
{
	(void)sig;
	_exit(0);
}

int main(void)
{
	signal(SIGTERM, end);
	signal(SIGINT, end);
	for (;;)
		pause();
}
