/*
 * TLS options of a libcurl handle (see curl_tls.h). Verification stays curl's default (on,
 * with the system's CA store) unless ca_file replaces the store or insecure_skip_verify
 * turns it off.
 */
#include "source/curl_tls.h"

int source_curl_tls(CURL *e, const struct cfg_tls *tls)
{
	int bad = 0;
	if (tls->ca_file)
		bad |= curl_easy_setopt(e, CURLOPT_CAINFO, tls->ca_file) != CURLE_OK;
	if (tls->cert_file)
		bad |= curl_easy_setopt(e, CURLOPT_SSLCERT, tls->cert_file) != CURLE_OK;
	if (tls->key_file)
		bad |= curl_easy_setopt(e, CURLOPT_SSLKEY, tls->key_file) != CURLE_OK;
	if (tls->insecure_skip_verify) {
		bad |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK;
		bad |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK;
	}
	return bad ? -1 : 0;
}
