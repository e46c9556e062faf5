/*
 * devchar_lookup: what C programs do to find the sysfs directory of a
 * device node they hold: fstat the descriptor, then
 * ROOT/sys/dev/char/MAJOR:MINOR (the kernel's /sys/dev/char links,
 * Documentation/ABI/stable/sysfs-dev). For each node path given it opens
 * the node, keeps it open, and prints
 *
 *	NODE MAJOR:MINOR dev=DEV pci=PCI
 *
 * with DEV the directory's dev attribute and PCI its device's pci_addr
 * ("-" when there is none), or "NODE MAJOR:MINOR error: ..." when the
 * lookup fails. ROOT is $GAUDI_ROOT.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* readattr reads the first line of file path into buf; -1 on failure. */
static int readattr(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int main(int argc, char **argv)
{
	const char *root = getenv("GAUDI_ROOT");
	if (!root)
		root = "";
	for (int i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			printf("%s open error: %s\n", argv[i], strerror(errno));
			return 1;
		}
		struct stat st;
		if (fstat(fd, &st) < 0) {
			printf("%s fstat error: %s\n", argv[i], strerror(errno));
			return 1;
		}
		unsigned maj = major(st.st_rdev), min = minor(st.st_rdev);
		char dir[4096], path[4200], dev[256], pci[256];
		snprintf(dir, sizeof(dir), "%s/sys/dev/char/%u:%u", root, maj, min);
		snprintf(path, sizeof(path), "%s/dev", dir);
		if (readattr(path, dev, sizeof(dev)) < 0) {
			printf("%s %u:%u error: %s: %s\n", argv[i], maj, min, path, strerror(errno));
			continue;
		}
		snprintf(path, sizeof(path), "%s/device/pci_addr", dir);
		if (readattr(path, pci, sizeof(pci)) < 0)
			strcpy(pci, "-");
		printf("%s %u:%u dev=%s pci=%s\n", argv[i], maj, min, dev, pci);
	}
	return 0;
}
