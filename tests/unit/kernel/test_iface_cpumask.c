/* The online CPU list turned into the mask rps_cpus takes (kernel/iface.c, host mode's RPS on
 * the packet port's end): ranges and single CPUs, 32-bit groups past CPU 31, and lists that
 * are not lists refused. No root, no interface. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernel/iface.h"

static int fails;

static void want(const char *list, int rc, const char *mask)
{
	char out[64] = "";
	int r = tl_cpu_list_mask(list, out, sizeof(out));

	if (r != rc || (rc == 0 && strcmp(out, mask))) {
		printf("FAIL: \"%s\": got %d \"%s\", want %d \"%s\"\n", list, r, out, rc, rc == 0 ? mask : "");
		fails++;
	}
}

int main(void)
{
	char tiny[3];

	want("0\n", 0, "1");
	want("0-1\n", 0, "3");
	want("0-3,8\n", 0, "10f");
	want("1,3,5-6", 0, "6a");
	want("0-31", 0, "ffffffff");
	want("0-32\n", 0, "1,ffffffff");
	want("2,40-41,70\n", 0, "40,00000300,00000004");
	want("", -EINVAL, NULL);
	want("\n", -EINVAL, NULL);
	want("a", -EINVAL, NULL);
	want("3-1", -EINVAL, NULL);
	want("0,", -EINVAL, NULL);
	want("0,,1", -EINVAL, NULL);
	want("0-", -EINVAL, NULL);
	want("-1", -EINVAL, NULL);
	want("0 1", -EINVAL, NULL);
	want("8192", -EINVAL, NULL);
	if (tl_cpu_list_mask("0-40", tiny, sizeof(tiny)) != -ENOSPC) {
		printf("FAIL: a 2-character buffer for \"0-40\" is not refused with -ENOSPC\n");
		fails++;
	}
	if (!fails)
		printf("cpu list masks ok\n");
	return fails != 0;
}
