// dis disassembles a raw x86-64 image with libbfd (binutils'
// libopcodes), the disassembler bpftool prog dump jited links, and prints
// per instruction a line: its offset, a tab, the text as bpftool prints
// it (every piece libbfd prints, concatenated), a tab, and the pieces as
// bpftool -j records them (the first one, trailing spaces trimmed, is the
// operation; pieces printed with the format "," are left out), separated
// by 0x1f. TestJitedMatchesLibbfd builds it with
//
//	gcc -o dis dis.c -lopcodes -lbfd
//
// where binutils-dev is installed. Targets are printed with
// generic_print_address at the image's offset, as bpftool with the image
// at address 0.
#define PACKAGE "dis"
#define _GNU_SOURCE
#include <bfd.h>
#include <dis-asm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char text[4096], pieces[4096];
static int npieces;

static void piece(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		exit(1);
	strncat(text, s, sizeof(text) - strlen(text) - 1);
	if (npieces == 0) {
		size_t n = strlen(s);

		while (n > 0 && s[n - 1] == ' ')
			s[--n] = '\0';
		strncat(pieces, s, sizeof(pieces) - strlen(pieces) - 1);
	} else if (strcmp(fmt, ",") != 0) {
		strncat(pieces, "\x1f", sizeof(pieces) - strlen(pieces) - 1);
		strncat(pieces, s, sizeof(pieces) - strlen(pieces) - 1);
	}
	npieces++;
	free(s);
}

static int print(void *stream, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	piece(fmt, ap);
	va_end(ap);
	return 0;
}

static int print_styled(void *stream, enum disassembler_style style, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	piece(fmt, ap);
	va_end(ap);
	return 0;
}

int main(int argc, char **argv)
{
	static unsigned char image[1 << 24];
	struct disassemble_info info;
	disassembler_ftype disasm;
	FILE *f;
	size_t n, pc;

	if (argc != 2 || !(f = fopen(argv[1], "rb")))
		return 2;
	n = fread(image, 1, sizeof(image), f);
	fclose(f);

	init_disassemble_info(&info, stdout, print, print_styled);
	info.arch = bfd_arch_i386;
	info.mach = bfd_mach_x86_64;
	info.buffer = image;
	info.buffer_length = n;
	disassemble_init_for_target(&info);
	disasm = disassembler(bfd_arch_i386, false, bfd_mach_x86_64, NULL);
	if (!disasm)
		return 1;
	for (pc = 0; pc < n;) {
		int len;

		text[0] = pieces[0] = '\0';
		npieces = 0;
		len = disasm(pc, &info);
		printf("%zx\t%s\t%s\n", pc, text, pieces);
		if (len <= 0)
			return 1;
		pc += len;
	}
	return 0;
}
