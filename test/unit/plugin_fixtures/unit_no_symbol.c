/* unit_no_symbol.c — a shared object without tsm_register. */
#include <tokenspeed/metric_reporter.h>

TSM_EXPORT int unit_not_the_register_function(void) { return 0; }
