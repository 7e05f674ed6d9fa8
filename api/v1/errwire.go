package v1

// An *Error is also the payload of an error reply: a frame of type TypeError
// with the Reply and Error flags set.
// Payload: u16 code | i32 result (CUresult or 0) | string message.

// Type returns TypeError.
func (*Error) Type() Type { return TypeError }

// Encode appends the error's payload.
func (e *Error) Encode(enc *Encoder) {
	enc.PutUint16(uint16(e.Code))
	enc.PutInt32(e.Result)
	enc.PutString(e.Message)
}

// Decode reads an error payload. Code 0 (success) is malformed; codes this
// version does not know are kept, since a later minor version may add codes.
func (e *Error) Decode(d *Decoder) error {
	e.Code = Code(d.Uint16())
	e.Result = d.Int32()
	e.Message = d.Text()
	if d.Err() == nil && e.Code == CodeOK {
		d.Failf("error reply with code 0")
	}
	return d.Err()
}
