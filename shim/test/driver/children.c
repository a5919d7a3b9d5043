/*
 * children.c: the driver program run again as a child process (fork and
 * exec of /proc/self/exe), with commands on its stdin: once, or kept
 * running to answer later ones. Its commands:
 *
 *   spawn CMD[;CMD...] run this program again as a child process (fork and
 *                      exec: the shim loads in it as in any child of a
 *                      partitioned program), with the commands on its stdin
 *                      -> "child PID STATUS OUT": its exit status and what it
 *                      printed, lines joined by '|'
 *   hold CMD[;CMD...]  run this program as a child that stays after running
 *                      the commands -> "held PID ready|OUT|..."
 *   tell CMD           a command for that child -> "told OUT"
 *   kill, reap         SIGKILL the child, or close its input; wait for it
 *                      -> "ended PID STATUS"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

/* start_child runs this program as a child reading the pipe in and
 * writing the pipe out, and keeps the ends the parent uses (in[1], out[0]). */
static pid_t start_child(int in[2], int out[2])
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execl("/proc/self/exe", "driver", (char *)NULL);
		_exit(127);
	}
	close(in[0]), close(out[1]);
	return pid;
}

/* spawn runs this program as a child with cmds (separated by ';') on its
 * stdin, and says what became of it. */
static void spawn(const char *cmds)
{
	int in[2], out[2];
	if (pipe(in) != 0 || pipe(out) != 0) {
		printf("error pipe\n");
		return;
	}
	pid_t pid = start_child(in, out);
	for (const char *c = cmds; *c; c++) {
		char ch = *c == ';' ? '\n' : *c;
		if (write(in[1], &ch, 1) != 1)
			break;
	}
	if (write(in[1], "\n", 1) != 1) {
		/* the child is gone already: its status says why */
	}
	close(in[1]);
	char buf[4096];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(out[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	close(out[0]);
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = '|';
	int status = 0;
	waitpid(pid, &status, 0);
	printf("child %d %d %s\n", (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), buf);
}

/* --- a child kept running ---------------------------------------------------------- */

static pid_t held;
static FILE *held_in, *held_out;

static int held_line(char *buf, size_t n)
{
	if (!fgets(buf, (int)n, held_out))
		return 0;
	buf[strcspn(buf, "\n")] = 0;
	return 1;
}

/* hold starts this program as a child that runs cmds and stays, answering
 * later commands (tell) until it is killed (kill) or let go (reap). */
static void hold(const char *cmds)
{
	int in[2], out[2];
	if (held || pipe(in) != 0 || pipe(out) != 0) {
		printf("error hold\n");
		return;
	}
	pid_t pid = start_child(in, out);
	held = pid;
	held_in = fdopen(in[1], "w");
	held_out = fdopen(out[0], "r");
	setvbuf(held_in, NULL, _IOLBF, 0);
	char line[256], all[2048] = "";
	held_line(line, sizeof line); /* ready */
	strcat(all, line);
	for (const char *c = cmds; *c;) {
		size_t k = strcspn(c, ";");
		fprintf(held_in, "%.*s\n", (int)k, c);
		if (!held_line(line, sizeof line))
			break;
		if (strlen(all) + strlen(line) + 2 < sizeof all)
			strcat(strcat(all, "|"), line);
		c += k + (c[k] == ';');
	}
	printf("held %d %s\n", (int)pid, all);
}

static void tell(const char *cmd)
{
	char line[256];
	if (!held) {
		printf("error no child\n");
		return;
	}
	fprintf(held_in, "%s\n", cmd);
	printf("told %s\n", held_line(line, sizeof line) ? line : "nothing");
}

static void end_held(int sig)
{
	int status = 0;
	if (!held) {
		printf("error no child\n");
		return;
	}
	if (sig)
		kill(held, sig);
	fclose(held_in);
	waitpid(held, &status, 0);
	fclose(held_out);
	printf("ended %d %d\n", (int)held, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	held = 0;
}

/* child_command answers the commands of this file; 0 if line is none of
 * them. */
int child_command(char *line)
{
	line[strcspn(line, "\n")] = 0;
	if (strncmp(line, "spawn ", 6) == 0) {
		spawn(line + 6);
	} else if (strncmp(line, "hold ", 5) == 0) {
		hold(line + 5);
	} else if (strncmp(line, "tell ", 5) == 0) {
		tell(line + 5);
	} else if (strcmp(line, "kill") == 0) {
		end_held(SIGKILL);
	} else if (strcmp(line, "reap") == 0) {
		end_held(0);
	} else {
		return 0;
	}
	return 1;
}
