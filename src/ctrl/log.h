/* Control-plane logging to stderr: one line per event, prefixed by the instance. When stderr
 * is the journal (systemd sets JOURNAL_STREAM to its device:inode), every line starts with
 * the syslog priority in the journal's form (<3> error, <4> warning, <6> info, <7> debug),
 * so `journalctl -p err` finds the errors. */
#ifndef TL_LOG_H
#define TL_LOG_H

#include <stdio.h>

extern const char *tl_log_name;
extern int tl_log_verbose;

#define TL_LOG_ERR 3
#define TL_LOG_WARNING 4
#define TL_LOG_INFO 6
#define TL_LOG_DEBUG 7

#define tl_log_err(...) tl_log_line(TL_LOG_ERR, __VA_ARGS__)
#define tl_log_warn(...) tl_log_line(TL_LOG_WARNING, __VA_ARGS__)
#define tl_log_info(...) tl_log_line(TL_LOG_INFO, __VA_ARGS__)
#define tl_log_debug(...) do { if (tl_log_verbose) tl_log_line(TL_LOG_DEBUG, __VA_ARGS__); } while (0)

/* One message; a message of several lines is written line by line, each with the prefix. */
void tl_log_line(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same without the level word ("name: message"): lines whose form is a contract, such as
 * the configuration loader's one error line. */
void tl_log_bare(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether lines carry the journal's priority prefix: decided at the first message from
 * JOURNAL_STREAM and stderr; tl_log_reset() makes the next message decide again (tests). */
void tl_log_reset(void);

#endif
