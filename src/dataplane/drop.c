/* Drop reasons (drop.h): their names and help texts from the one list. */
#include "dataplane/drop.h"

const char *const tl_drop_names[TL_DROP_MAX] = {
#define TL_DROP_NAME(name, help) #name,
	TL_DROP_REASONS(TL_DROP_NAME)
#undef TL_DROP_NAME
};

const char *const tl_drop_help[TL_DROP_MAX] = {
#define TL_DROP_HELP(name, help) help,
	TL_DROP_REASONS(TL_DROP_HELP)
#undef TL_DROP_HELP
};
