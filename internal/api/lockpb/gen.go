// Package lockpb holds the generated code of etcd's Lock service (proto
// package v3lockpb): messages, gRPC service and JSON gateway. Tools: as
// for electionpb.
package lockpb

//go:generate protoc -I . -I ../protostub --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --grpc-gateway_out=. --grpc-gateway_opt=paths=source_relative,grpc_api_configuration=v3lock.yaml v3lock.proto
