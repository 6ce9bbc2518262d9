/* Control-plane logging to stderr: one line per event, prefixed by the instance. */
#ifndef TL_LOG_H
#define TL_LOG_H

#include <stdio.h>

extern const char *tl_log_name;
extern int tl_log_verbose;

#define tl_log_err(...) tl_log_line("error", __VA_ARGS__)
#define tl_log_info(...) tl_log_line("info", __VA_ARGS__)
#define tl_log_debug(...) do { if (tl_log_verbose) tl_log_line("debug", __VA_ARGS__); } while (0)

void tl_log_line(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
