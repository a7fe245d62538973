package api

import (
	"bytes"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// encodedOutput is the output of an operation whose answer is already encoded (the kept
// billing answer, the verified token's user): huma negotiates, transforms and marshals
// nothing, and the bytes are written as they are. Such an operation is registered through
// describedBy, so that its OpenAPI description is still that of the type it encodes.
type encodedOutput struct {
	Body func(huma.Context)
}

// encodedJSON answers 200 with parts one after the other, ended by a newline as huma's
// JSON encoder ends a body. The parts are shared: they are only read.
func encodedJSON(parts ...[]byte) *encodedOutput {
	return &encodedOutput{Body: func(ctx huma.Context) {
		ctx.SetHeader("Content-Type", "application/json")
		ctx.SetStatus(http.StatusOK)
		w := ctx.BodyWriter()
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return // the client has gone; there is no one to tell
			}
		}
		w.Write([]byte{'\n'})
	}}
}

// describedBy gives op the 200 response huma would describe for an output of type T (its
// Body's schema, under the same name), for an operation that answers with encodedJSON.
func describedBy[T any](api huma.API, op huma.Operation) huma.Operation {
	t := reflect.TypeFor[T]()
	body, ok := t.FieldByName("Body")
	if !ok {
		panic("describedBy: " + t.Name() + " has no Body")
	}
	schema := huma.SchemaFromField(api.OpenAPI().Components.Schemas, body, t.Name()+body.Name)
	op.Responses = map[string]*huma.Response{
		"200": {Description: http.StatusText(http.StatusOK), Content: map[string]*huma.MediaType{"application/json": {Schema: schema}}},
	}
	return op
}

// encodeJSON is v as huma's JSON format writes it (HTML characters unescaped), without the
// newline that ends a body.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := huma.DefaultJSONFormat.Marshal(&b, v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
