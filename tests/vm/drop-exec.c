/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* drop-exec.c: runs a command as UID:GID with no groups and no capabilities left (busybox has no setpriv --reuid). */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

/*
 * usage: drop-exec UID GID COMMAND [ARGS...]
 * Open file descriptors are inherited: a root broker opens a usbfs node
 * as fd 3, then drop-exec hands it to an unprivileged ncm-proxy --usb-fd 3.
 * setuid() from root to a non-zero uid clears the permitted, effective and
 * ambient capability sets; PR_SET_NO_NEW_PRIVS keeps them from coming back.
 */
int
main(int argc, char **argv)
{
	uid_t uid;
	gid_t gid;

	if (argc < 4) {
		fprintf(stderr, "usage: %s UID GID COMMAND [ARGS...]\n", argv[0]);
		return 2;
	}
	uid = (uid_t)strtoul(argv[1], NULL, 10);
	gid = (gid_t)strtoul(argv[2], NULL, 10);
	if (uid == 0 || setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0 ||
	    setuid(0) == 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		perror("drop-exec");
		return 2;
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
