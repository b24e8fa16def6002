/* SPDX-License-Identifier: MIT */
/*
 * UUIDs as the swap header stores them: 16 raw bytes, shown as the
 * canonical 36-character text "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
 */
#ifndef USWAP_UTIL_UUID_H
#define USWAP_UTIL_UUID_H

#include <stdint.h>

#define USWAP_UUID_SIZE		16
#define USWAP_UUID_STR_LEN	36			/* without the NUL */
#define USWAP_UUID_STR_SIZE	(USWAP_UUID_STR_LEN + 1)

int uswap_uuid_parse(const char *text, uint8_t uuid[USWAP_UUID_SIZE]);
void uswap_uuid_format(const uint8_t uuid[USWAP_UUID_SIZE],
		       char text[USWAP_UUID_STR_SIZE]);
int uswap_uuid_generate(uint8_t uuid[USWAP_UUID_SIZE]);
int uswap_uuid_is_null(const uint8_t uuid[USWAP_UUID_SIZE]);

#endif
