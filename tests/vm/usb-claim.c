// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/vm/usb-claim.c: guest tool for the harness test: lists usbfs and claims interfaces like libusb would.
//
// usage: vm-usb-claim [--hold SECONDS] DEVNODE IFACE...
//        vm-usb-claim --reset DEVNODE
// Lists /dev/bus/usb, then claims each IFACE of DEVNODE through usbfs;
// --hold keeps the claims that long before exiting (a program such as
// usbmuxd holding an interface), after printing "usb-claim: holding".
// --reset resets the device as another program can (USBDEVFS_RESET, what
// usbreset and some daemons do, and what the hub driver does after errors).
// Exit status: 0 all claimed, 2 an interface is held by a kernel driver
// (EBUSY), 1 any other failure. The guest script decides which it expects.

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/usbdevice_fs.h>

// A usbfs node reads back as the device descriptor followed by the
// configurations; bytes 8..11 hold idVendor and idProduct.
static int
read_ids(const char *node, int flags, int *ret_fd, uint16_t *ret_vid, uint16_t *ret_pid)
{
	uint8_t desc[18];
	int fd = open(node, flags | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (read(fd, desc, sizeof(desc)) != (ssize_t)sizeof(desc) || desc[1] != 1) {
		close(fd);
		return -EIO;
	}
	*ret_vid = (uint16_t)(desc[8] | desc[9] << 8);
	*ret_pid = (uint16_t)(desc[10] | desc[11] << 8);
	if (ret_fd)
		*ret_fd = fd;
	else
		close(fd);
	return 0;
}

static int
list_usbfs(void)
{
	const char *root = "/dev/bus/usb";
	DIR *buses = opendir(root);
	struct dirent *b, *d;
	int count = 0;

	if (!buses) {
		fprintf(stderr, "usb-claim: %s: %s\n", root, strerror(errno));
		return -1;
	}
	while ((b = readdir(buses))) {
		char dir[PATH_MAX];
		DIR *devs;

		if (b->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, b->d_name);
		devs = opendir(dir);
		if (!devs)
			continue;
		while ((d = readdir(devs))) {
			char node[PATH_MAX + 256];
			uint16_t vid = 0, pid = 0;

			if (d->d_name[0] == '.')
				continue;
			snprintf(node, sizeof(node), "%s/%s", dir, d->d_name);
			if (read_ids(node, O_RDONLY, NULL, &vid, &pid) == 0)
				printf("usbfs: %s %04x:%04x\n", node, vid, pid);
			count++;
		}
		closedir(devs);
	}
	closedir(buses);
	return count;
}

int
main(int argc, char **argv)
{
	uint16_t vid = 0, pid = 0;
	int fd = -1, r, busy = 0, failed = 0;
	unsigned int hold = 0;

	if (argc == 3 && strcmp(argv[1], "--reset") == 0) {
		r = read_ids(argv[2], O_RDWR, &fd, &vid, &pid);
		if (r < 0) {
			fprintf(stderr, "usb-claim: open %s: %s\n", argv[2], strerror(-r));
			return 1;
		}
		r = ioctl(fd, USBDEVFS_RESET, 0);
		printf("usb-claim: reset %s (%04x:%04x): %s\n", argv[2], vid, pid,
		       r == 0 ? "done" : strerror(errno));
		close(fd);
		return r == 0 ? 0 : 1;
	}
	if (argc > 2 && strcmp(argv[1], "--hold") == 0) {
		hold = (unsigned int)strtoul(argv[2], NULL, 0);
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: vm-usb-claim [--hold SECONDS] DEVNODE IFACE...\n");
		return 1;
	}
	if (list_usbfs() <= 0) {
		fprintf(stderr, "usb-claim: no usbfs nodes\n");
		return 1;
	}
	r = read_ids(argv[1], O_RDWR, &fd, &vid, &pid);
	if (r < 0) {
		fprintf(stderr, "usb-claim: open %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	printf("usb-claim: %s is %04x:%04x\n", argv[1], vid, pid);
	for (int i = 2; i < argc; i++) {
		unsigned int iface = (unsigned int)strtoul(argv[i], NULL, 0);

		if (ioctl(fd, USBDEVFS_CLAIMINTERFACE, &iface) == 0) {
			printf("usb-claim: interface %u claimed\n", iface);
			continue;
		}
		printf("usb-claim: interface %u: %s\n", iface, strerror(errno));
		if (errno == EBUSY)
			busy = 1;
		else
			failed = 1;
	}
	if (hold && !failed && !busy) {
		printf("usb-claim: holding\n");
		fflush(stdout);
		sleep(hold);
	}
	close(fd); // releases every claim
	return failed ? 1 : busy ? 2 : 0;
}
