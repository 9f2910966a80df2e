// Package electionpb holds the generated code of etcd's Election service
// (proto package v3electionpb): messages, gRPC service and JSON gateway.
// Tools: protoc, protoc-gen-go and protoc-gen-grpc-gateway at the versions
// of google.golang.org/protobuf and grpc-gateway/v2 in go.mod, and
// protoc-gen-go-grpc v1.5.1.
package electionpb

//go:generate protoc -I . -I ../protostub --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --grpc-gateway_out=. --grpc-gateway_opt=paths=source_relative,grpc_api_configuration=v3election.yaml v3election.proto
