/* test_plugin_log.h — the log file test plugins write for their tests to read:
 * one line "<call> <pid> <detail>" appended per call (O_APPEND, so processes
 * sharing the file never interleave a line). Test code only; libc alone. */
#ifndef TSM_TEST_PLUGIN_LOG_H
#define TSM_TEST_PLUGIN_LOG_H

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* Appends the line to path ("" writes nothing); best effort. */
static inline void test_plugin_append_line(const char *path, const char *call, const char *detail) {
  char line[2048];
  const int n = snprintf(line, sizeof line, "%s %ld %s\n", call, (long)getpid(), detail);
  int fd;
  if (path[0] == '\0' || n < 0 || (size_t)n >= sizeof line) return;
  fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) < 0) { /* best effort */
  }
  close(fd);
}

#endif /* TSM_TEST_PLUGIN_LOG_H */
