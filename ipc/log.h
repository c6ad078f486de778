/* Logging shared by the supervisor, workers and daemons: one line per
 * record on stderr, text or JSON, with a component name. */
#ifndef MOKKA_IPC_LOG_H
#define MOKKA_IPC_LOG_H

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };
enum log_format { LOG_FMT_TEXT, LOG_FMT_JSON };

void log_setup(const char *component, enum log_level level, enum log_format fmt);
/* The supervisor's --log-level/--log-format reach every worker and daemon
 * as MOKKA_LOG_LEVEL/MOKKA_LOG_FORMAT: log_env lays them over the given
 * defaults (an unknown value keeps the default); log_setup_env is
 * log_setup with info/text under them, for daemons without log flags. */
void log_env(enum log_level *level, enum log_format *fmt);
void log_setup_env(const char *component);
int log_parse_level(const char *s, enum log_level *out);	/* 0 or -EINVAL */
int log_parse_format(const char *s, enum log_format *out);	/* 0 or -EINVAL */
/* The names log_parse_level and log_parse_format take. */
const char *log_level_name(enum log_level level);
const char *log_format_name(enum log_format fmt);
enum log_level log_get_level(void);
enum log_format log_get_format(void);

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
