/* SPDX-License-Identifier: MIT */
/*
 * UUID text conversion and random (version 4) UUIDs.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/random.h>

#include "util/uuid.h"

/* Byte i of the binary form starts at this character of the text form. */
static const unsigned char uuid_text_pos[USWAP_UUID_SIZE] = {
	0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34,
};

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/**
 * uswap_uuid_parse() - convert canonical UUID text to 16 bytes
 * @text: exactly 36 characters, hyphens at 8, 13, 18 and 23, hex digits
 *        (either case) elsewhere, then the NUL
 * @uuid: receives the bytes; left untouched on error
 *
 * Context: any; pure.
 * Return: 0, or -EINVAL if @text is not a canonical UUID.
 */
int uswap_uuid_parse(const char *text, uint8_t uuid[USWAP_UUID_SIZE])
{
	uint8_t tmp[USWAP_UUID_SIZE];
	size_t i;

	if (!text || strlen(text) != USWAP_UUID_STR_LEN)
		return -EINVAL;
	if (text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-')
		return -EINVAL;
	for (i = 0; i < USWAP_UUID_SIZE; i++) {
		int hi = hex_value(text[uuid_text_pos[i]]);
		int lo = hex_value(text[uuid_text_pos[i] + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		tmp[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(uuid, tmp, sizeof(tmp));
	return 0;
}

/**
 * uswap_uuid_format() - write the canonical lower-case text of a UUID
 * @uuid: 16 bytes
 * @text: receives 36 characters and a NUL
 *
 * Context: any; pure.
 */
void uswap_uuid_format(const uint8_t uuid[USWAP_UUID_SIZE],
		       char text[USWAP_UUID_STR_SIZE])
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	memset(text, '-', USWAP_UUID_STR_LEN);
	for (i = 0; i < USWAP_UUID_SIZE; i++) {
		text[uuid_text_pos[i]] = digits[uuid[i] >> 4];
		text[uuid_text_pos[i] + 1] = digits[uuid[i] & 0xf];
	}
	text[USWAP_UUID_STR_LEN] = '\0';
}

/**
 * uswap_uuid_generate() - make a random (version 4, RFC 4122 variant) UUID
 * @uuid: receives 16 bytes
 *
 * Context: may sleep (getrandom() blocks until the kernel's pool is
 * initialised, early at boot only).
 * Return: 0, or the -errno of getrandom() (-ENOSYS on very old kernels).
 */
int uswap_uuid_generate(uint8_t uuid[USWAP_UUID_SIZE])
{
	size_t done = 0;

	while (done < USWAP_UUID_SIZE) {
		ssize_t n = getrandom(uuid + done, USWAP_UUID_SIZE - done, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);	/* version 4: random */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);	/* variant 10xx */
	return 0;
}

/**
 * uswap_uuid_is_null() - test for the all-zero UUID
 * @uuid: 16 bytes
 *
 * Context: any; pure.
 * Return: 1 if every byte is zero, else 0.
 */
int uswap_uuid_is_null(const uint8_t uuid[USWAP_UUID_SIZE])
{
	size_t i;

	for (i = 0; i < USWAP_UUID_SIZE; i++)
		if (uuid[i])
			return 0;
	return 1;
}
