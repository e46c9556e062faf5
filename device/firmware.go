package device

import (
	"fmt"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Attestation is the device's signed security report (INFO
// SECURED_ATTESTATION): the platform configuration registers, their quote
// and its signature, and the public data and certificate to check them
// with. Each slice holds only the bytes the firmware filled in.
type Attestation struct {
	Nonce       uint32 // the nonce the report was made for
	PCRData     []byte // PcrNumReg registers of PcrRegLen bytes each
	PCRQuote    []byte
	QuoteSig    []byte
	PublicData  []byte
	Certificate []byte
}

// SecuredAttestation asks the firmware for an attestation report signed
// over nonce. Firmware without a security module answers EIO (so does the
// simulator). It replaces hlthunk_get_sec_attest_info.
func (d *Device) SecuredAttestation(nonce uint32) (Attestation, error) {
	r, err := infoStruct[hl.InfoSecAttest](d, hl.HL_INFO_SECURED_ATTESTATION, func(a *hl.InfoArgs) {
		a.SetSecAttestNonce(nonce)
	})
	if err != nil {
		return Attestation{}, err
	}
	pcr := min(int(r.PcrNumReg)*int(r.PcrRegLen), len(r.PcrData))
	return Attestation{
		Nonce:       r.Nonce,
		PCRData:     append([]byte(nil), r.PcrData[:pcr]...),
		PCRQuote:    append([]byte(nil), r.PcrQuote[:min(int(r.PcrQuoteLen), len(r.PcrQuote))]...),
		QuoteSig:    append([]byte(nil), r.QuoteSig[:min(int(r.QuoteSigLen), len(r.QuoteSig))]...),
		PublicData:  append([]byte(nil), r.PublicData[:min(int(r.PubDataLen), len(r.PublicData))]...),
		Certificate: append([]byte(nil), r.Certificate[:min(int(r.CertificateLen), len(r.Certificate))]...),
	}, nil
}

// FWPassthroughVersions is the only generic firmware request the driver
// forwards (HL_PASSTHROUGH_VERSIONS): the firmware components' versions.
const FWPassthroughVersions = 0

// FWGenericRequest sends the generic firmware request subOpcode
// (FWPassthroughVersions) and writes the firmware's answer into buf, which
// must hold 1 to 1 MiB (the driver answers EINVAL above, ENOMEM for 0).
// The answer's layout is the firmware's. It replaces
// hlthunk_fw_send_generic_request.
func (d *Device) FWGenericRequest(subOpcode uint32, buf []byte) error {
	var a hl.InfoArgs
	a.SetFWSubOpcode(subOpcode)
	if err := d.io.Info(hl.HL_INFO_FW_GENERIC_REQ, &a, buf); err != nil {
		return fmt.Errorf("firmware request %d: %w", subOpcode, err)
	}
	return nil
}
