/* Build tool: turns a text file into a C source defining `const char <name>_text[]` (NUL
 * terminated) and `const size_t <name>_len`. Used to embed the control API spec in
 * tunlessd and tunlessctl.  Usage: ctlapi_embed INPUT OUTPUT.c NAME */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	FILE *in, *out;
	size_t n = 0;
	int c;

	if (argc != 4) {
		fprintf(stderr, "usage: %s INPUT OUTPUT.c NAME\n", argv[0]);
		return 2;
	}
	in = fopen(argv[1], "rb");
	out = fopen(argv[2], "w");
	if (!in || !out) {
		perror(in ? argv[2] : argv[1]);
		return 1;
	}
	fprintf(out, "/* Generated from %s by ctlapi_embed: do not edit. */\n#include <stddef.h>\n\n", argv[1]);
	fprintf(out, "const char %s_text[] = {", argv[3]);
	while ((c = fgetc(in)) != EOF) {
		fprintf(out, "%s0x%02x,", n % 16 ? " " : "\n\t", (unsigned)c);
		n++;
	}
	fprintf(out, "\n\t0x00\n};\nconst size_t %s_len = %zu;\n", argv[3], n);
	if (ferror(in) || fclose(out) != 0) {
		fprintf(stderr, "%s: read or write error\n", argv[0]);
		return 1;
	}
	fclose(in);
	return 0;
}
