/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cdc.h: pure parsers for NCM descriptors, GET_NTB_PARAMETERS and notifications. */
#pragma once

/*
 * Descriptors and control replies are device input too: every length is
 * checked before a byte is read. No libusb, GLib or lwIP header here, so the
 * fuzzers link this directly. No allocation.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Class requests (bmRequestType 0x21 out / 0xA1 in, wIndex = comm interface). */
enum {
	NCM_REQ_SET_ETHERNET_PACKET_FILTER = 0x43,
	NCM_REQ_GET_NTB_PARAMETERS = 0x80,
	NCM_REQ_GET_NET_ADDRESS = 0x81,
	NCM_REQ_SET_NET_ADDRESS = 0x82,
	NCM_REQ_GET_NTB_FORMAT = 0x83,
	NCM_REQ_SET_NTB_FORMAT = 0x84,
	NCM_REQ_GET_NTB_INPUT_SIZE = 0x85,
	NCM_REQ_SET_NTB_INPUT_SIZE = 0x86,
	NCM_REQ_GET_MAX_DATAGRAM_SIZE = 0x87,
	NCM_REQ_SET_MAX_DATAGRAM_SIZE = 0x88,
	NCM_REQ_GET_CRC_MODE = 0x89,
	NCM_REQ_SET_CRC_MODE = 0x8A,
};

/* bmNetworkCapabilities bits. */
enum {
	NCM_CAP_PACKET_FILTER = 1u << 0,
	NCM_CAP_NET_ADDRESS = 1u << 1,
	NCM_CAP_ENCAPSULATED = 1u << 2,
	NCM_CAP_MAX_DATAGRAM = 1u << 3,
	NCM_CAP_CRC_MODE = 1u << 4,
	NCM_CAP_NTB_INPUT_8 = 1u << 5,
};

/* Packet filter bits for SET_ETHERNET_PACKET_FILTER. */
enum {
	NCM_FILTER_PROMISCUOUS = 0x01,
	NCM_FILTER_ALL_MULTICAST = 0x02,
	NCM_FILTER_DIRECTED = 0x04,
	NCM_FILTER_BROADCAST = 0x08,
	NCM_FILTER_MULTICAST = 0x10,
};

/* ---- Descriptors ---------------------------------------------------- */

/* One NCM function found in one configuration. */
typedef struct {
	uint8_t config_value;        /* bConfigurationValue holding it */
	uint8_t comm_iface;          /* communication interface (class 02, subclass 0d) */
	uint8_t comm_alt;
	uint8_t data_iface;          /* data interface (class 0a) */
	uint8_t data_alt;            /* the data alt setting with bulk IN + OUT (usually 1) */
	uint8_t intr_ep;             /* interrupt IN endpoint address, 0 if none */
	uint16_t intr_max_packet;
	uint8_t bulk_in_ep;
	uint8_t bulk_out_ep;
	uint16_t bulk_in_max_packet;
	uint16_t bulk_out_max_packet;
	uint8_t mac_string_index;    /* iMACAddress, 0 if no Ethernet descriptor */
	uint16_t max_segment_size;   /* wMaxSegmentSize, 0 if no Ethernet descriptor */
	uint16_t bcd_cdc;            /* from the Header descriptor, 0 if absent */
	uint16_t bcd_ncm;            /* from the NCM descriptor, 0 if absent */
	uint8_t net_caps;            /* bmNetworkCapabilities */
	bool has_union;              /* data interface came from a Union descriptor */
	bool has_iad;                /* ... or, failing that, from an IAD */
	bool has_ncm_desc;
} NcmCdcFunction;

typedef enum {
	NCM_CDC_OK = 0,
	NCM_CDC_ERR_TRUNCATED,       /* blob shorter than a configuration descriptor */
	NCM_CDC_ERR_NOT_CONFIG,      /* first descriptor is not a configuration */
	NCM_CDC_ERR_BAD_LENGTH,      /* a bLength of 0, < 2, or past the blob */
	NCM_CDC_ERR_TOO_MANY,        /* more functions than the caller's array holds */
} NcmCdcStatus;

const char *ncm_cdc_status_name(NcmCdcStatus status);

/*
 * Walks one raw configuration descriptor blob (as GET_DESCRIPTOR(CONFIG)
 * returns it: config, then interfaces, class descriptors and endpoints) and
 * fills @functions with every complete NCM function (comm interface with a
 * matching data interface that has an alt setting with bulk IN and OUT).
 * Incomplete or malformed functions are skipped, never reported half-filled.
 * Returns NCM_CDC_OK even when none is found (*@ret_n_found = 0).
 * A descriptor whose bLength runs past the blob ends the walk with
 * NCM_CDC_ERR_BAD_LENGTH, but functions completed before it are kept.
 * BAD_LENGTH wins over TOO_MANY. Bytes past wTotalLength are not walked.
 * No interface is reported in two functions (the first claim wins), and at
 * most 64 comm interfaces per blob are examined.
 */
NcmCdcStatus ncm_cdc_parse_config(const uint8_t *blob, size_t len, NcmCdcFunction *functions,
				  size_t max_functions, size_t *ret_n_found);

/*
 * Decodes a USB string descriptor holding 12 hex digits in UTF-16LE (the
 * iMACAddress string) into @mac. Returns false for anything else.
 */
bool ncm_cdc_parse_mac_string(const uint8_t *desc, size_t len, uint8_t mac[6]);

/* A MAC a host interface can use as its own: not all zero, not multicast. */
bool ncm_cdc_mac_usable(const uint8_t mac[6]);

/* Turns 6 bytes of entropy into a unicast, locally administered MAC, for
 * functions whose iMACAddress is missing or unusable. */
void ncm_cdc_mac_make_local(uint8_t mac[6]);

/* ---- GET_NTB_PARAMETERS --------------------------------------------- */

typedef struct {
	uint16_t formats;            /* bmNtbFormatsSupported (bit0 16, bit1 32) */
	uint32_t in_max_size;        /* dwNtbInMaxSize */
	uint16_t in_divisor;
	uint16_t in_remainder;
	uint16_t in_alignment;
	uint32_t out_max_size;       /* dwNtbOutMaxSize */
	uint16_t out_divisor;
	uint16_t out_remainder;
	uint16_t out_alignment;
	uint16_t out_max_datagrams;  /* 0 = no limit */
} NcmNtbParams;

typedef enum {
	NCM_PARAMS_OK = 0,
	NCM_PARAMS_ERR_SHORT,        /* fewer than 28 bytes */
	NCM_PARAMS_ERR_LENGTH,       /* wLength below 28 or above what arrived */
	NCM_PARAMS_ERR_NO_NTB16,     /* NTB16 is mandatory */
	NCM_PARAMS_ERR_OUT_SIZE,     /* dwNtbOutMaxSize 1 to 127: no IP packet fits */
} NcmParamsStatus;

const char *ncm_params_status_name(NcmParamsStatus status);

/*
 * Parses and validates a GET_NTB_PARAMETERS reply. Divisors and alignments
 * that are not a power of two >= 4 are replaced by 4 (what the kernel does)
 * and @ret_fixups (may be NULL) counts how many were replaced. One not below its
 * direction's max size is replaced too. dwNtbInMaxSize may be anything and
 * dwNtbOutMaxSize 0 (neither said) or at least 128: the spec's 2048 is not
 * enforced, as in Linux. Remainders are kept as sent. On
 * error, @params and @ret_fixups are not written.
 */
NcmParamsStatus ncm_params_parse(const uint8_t *buf, size_t len, NcmNtbParams *params,
				 unsigned *ret_fixups);

/* ---- Interrupt notifications ---------------------------------------- */

enum {
	NCM_NOTIFY_NETWORK_CONNECTION = 0x00,
	NCM_NOTIFY_RESPONSE_AVAILABLE = 0x01,
	NCM_NOTIFY_CONNECTION_SPEED_CHANGE = 0x2A,
};

typedef enum {
	NCM_NOTIFY_EVENT_NONE = 0,   /* nothing complete yet (e.g. first half of a speed change) */
	NCM_NOTIFY_EVENT_LINK,       /* link_up valid */
	NCM_NOTIFY_EVENT_SPEED,      /* down_bps / up_bps valid */
	NCM_NOTIFY_EVENT_RESPONSE,   /* RESPONSE_AVAILABLE: ignored by NCM, counted */
	NCM_NOTIFY_EVENT_UNKNOWN,    /* a well-formed notification we do not handle */
	NCM_NOTIFY_EVENT_MALFORMED,  /* too short, bad bmRequestType, bad wLength */
} NcmNotifyEventType;

typedef struct {
	NcmNotifyEventType type;
	bool link_up;
	uint32_t down_bps;
	uint32_t up_bps;
} NcmNotifyEvent;

/* Carries a speed-change header across two transfers. Zero it to start. */
typedef struct {
	bool want_speed_data;
	uint8_t pending[8];
	size_t pending_len;
} NcmNotifyParser;

/*
 * Feeds one interrupt-IN transfer. A CONNECTION_SPEED_CHANGE whose 8 data
 * bytes come in a second transfer yields NONE first, then SPEED.
 */
NcmNotifyEvent ncm_notify_parser_feed(NcmNotifyParser *parser, const uint8_t *buf, size_t len);

/* ---- Apple NCM mode switch ------------------------------------------ */

/*
 * Apple devices expose NCM only after a vendor request. The switch is a
 * fixed request sequence; it is expressed through a transport callback so
 * that it is unit-tested as a sequence without a device.
 */
#define NCM_APPLE_VID 0x05ac
#define NCM_APPLE_REQ_GET_MODE 0x45
#define NCM_APPLE_REQ_SET_MODE 0x52
#define NCM_APPLE_MODE_NCM_INDEX 3

typedef struct {
	uint8_t request_type;   /* bmRequestType */
	uint8_t request;
	uint16_t value;
	uint16_t index;
	uint16_t length;        /* wLength (IN: bytes wanted) */
} NcmControlSetup;

/*
 * Performs one control transfer; returns the number of bytes transferred
 * (into @data for IN) or a negative number on failure.
 */
typedef int (*NcmControlFunc)(void *user_data, const NcmControlSetup *setup, uint8_t *data);

typedef enum {
	NCM_APPLE_SWITCH_ALREADY = 0,  /* the mode already includes NCM: nothing sent */
	NCM_APPLE_SWITCH_REQUESTED,    /* asked for NCM: expect re-enumeration */
	NCM_APPLE_SWITCH_FAILED,       /* a request failed or the reply was malformed */
} NcmAppleSwitchResult;

/*
 * Reads the 4-byte mode (vendor IN 0x45) and, unless it already selects NCM,
 * asks for the NCM mode (vendor IN 0x52, wIndex 3). @ret_mode (may be NULL)
 * gets the mode read.
 */
NcmAppleSwitchResult ncm_apple_mode_switch(NcmControlFunc control, void *user_data,
					   uint32_t *ret_mode);

#ifdef __cplusplus
}
#endif
