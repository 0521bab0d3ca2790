/* SPDX-License-Identifier: MIT */
/* The consent file (agent/daemon/consent.h). */
#include "agent/daemon/consent.h"
#include "hal/fs.h"
#include "uploader/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int jittd_consent_init(struct jittd_consent *k, const struct agent_config *c)
{
	int n = c->up.consent_file[0]
			? snprintf(k->path, sizeof(k->path), "%s", c->up.consent_file)
			: snprintf(k->path, sizeof(k->path), "%s/consent", c->data_dir);
	if (n < 0 || (size_t)n >= sizeof(k->path))
		return -ENAMETOOLONG;
	const char *slash = strrchr(k->path, '/');
	snprintf(k->dir, sizeof(k->dir), "%.*s", slash == k->path ? 1 : (int)(slash - k->path),
		 k->path);
	k->name = slash + 1;
	k->system_uid = c->system_uid;
	return 0;
}

bool jittd_consent_read(const struct jittd_consent *k, char *why, size_t whysize)
{
	struct stat st;
	int fd = hal_open_file(AT_FDCWD, k->path, false, &st);
	if (fd < 0) {
		snprintf(why, whysize, "%s: %s", k->path,
			 fd == -ENOENT ? "none (consent is off until granted)" : strerror(-fd));
		return false;
	}
	/* Whoever can write this file can send data off the device. */
	bool owner_ok = st.st_uid == 0 || st.st_uid == geteuid() ||
			(k->system_uid >= 0 && st.st_uid == (uid_t)k->system_uid);
	if (!owner_ok || (st.st_mode & 022)) {
		close(fd);
		snprintf(why, whysize, "%s: owned by uid %u or writable by others: ignored",
			 k->path, (unsigned)st.st_uid);
		return false;
	}
	char text[64];
	ssize_t n = st.st_size < (off_t)sizeof(text) ? read(fd, text, sizeof(text)) : -1;
	close(fd);
	bool granted = false;
	if (n < 0 || up_consent_parse(text, (size_t)n, &granted) != 0) {
		snprintf(why, whysize, "%s: not \"granted\" or \"revoked\"", k->path);
		return false;
	}
	if (!granted)
		snprintf(why, whysize, "%s says revoked", k->path);
	return granted;
}

int jittd_consent_write(const struct jittd_consent *k, bool granted)
{
	int dfd = open(k->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	char tmp[AGENT_PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), ".tmp-%s", k->name);
	const char *text = up_consent_text(granted);
	int e = hal_file_write_at(dfd, tmp, k->name, text, strlen(text));
	close(dfd);
	return e;
}
