/* One record per line on stderr.  JSON records are built by hand (a log
 * call must not allocate through cJSON on an error path). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"

static const char *log_component = "mokka";
static enum log_level log_level = LOG_LVL_INFO;
static enum log_format log_format = LOG_FMT_TEXT;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error", [LOG_LVL_WARN] = "warn",
	[LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
};

void log_setup(const char *component, enum log_level level, enum log_format fmt)
{
	if (component)
		log_component = component;
	log_level = level;
	log_format = fmt;
}

void log_env(enum log_level *level, enum log_format *fmt)
{
	const char *v;

	if ((v = getenv("MOKKA_LOG_LEVEL")))
		log_parse_level(v, level);
	if ((v = getenv("MOKKA_LOG_FORMAT")))
		log_parse_format(v, fmt);
}

void log_setup_env(const char *component)
{
	enum log_level level = LOG_LVL_INFO;
	enum log_format fmt = LOG_FMT_TEXT;

	log_env(&level, &fmt);
	log_setup(component, level, fmt);
}

const char *log_level_name(enum log_level level) { return level_names[level]; }
const char *log_format_name(enum log_format fmt) { return fmt == LOG_FMT_JSON ? "json" : "text"; }
enum log_level log_get_level(void) { return log_level; }
enum log_format log_get_format(void) { return log_format; }

int log_parse_level(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	if (strcmp(s, "warning") == 0) {
		*out = LOG_LVL_WARN;
		return 0;
	}
	return -EINVAL;
}

int log_parse_format(const char *s, enum log_format *out)
{
	if (strcmp(s, "text") == 0)
		*out = LOG_FMT_TEXT;
	else if (strcmp(s, "json") == 0)
		*out = LOG_FMT_JSON;
	else
		return -EINVAL;
	return 0;
}

static size_t json_escape(char *dst, size_t cap, const char *src)
{
	size_t o = 0;

	for (; *src && o + 7 < cap; src++) {
		unsigned char c = (unsigned char)*src;
		if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)c;
		} else if (c < 0x20) {
			o += (size_t)snprintf(dst + o, cap - o, "\\u%04x", c);
		} else {
			dst[o++] = (char)c;
		}
	}
	dst[o] = '\0';
	return o;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char msg[2048], ts[96];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	int saved = errno;

	if (lvl > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000));
	if (log_format == LOG_FMT_JSON) {
		char esc[4096 + 64];
		json_escape(esc, sizeof(esc), msg);
		fprintf(stderr, "{\"time\":\"%s\",\"level\":\"%s\",\"component\":\"%s\",\"pid\":%d,\"msg\":\"%s\"}\n",
			ts, level_names[lvl], log_component, (int)getpid(), esc);
	} else {
		fprintf(stderr, "%s %-5s %s[%d]: %s\n", ts, level_names[lvl],
			log_component, (int)getpid(), msg);
	}
	fflush(stderr);
	errno = saved;
}
